// The access line is put together by hand (src/observations/logger.ts accessLog): it must be, byte for byte, the line pino
// writes for the same fields, whatever the fields hold and at whatever level the logger is.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { accessLog, createLogger } from '../../src/observations/logger.js';

const CASES: Parameters<ReturnType<typeof accessLog>>[] = [
  ['b7a1c0de-0000-4000-8000-000000000001', 'GET', '/plants/9223372036854775807', 200, undefined, 0.52],
  ['trace-abc.123', 'POST', '/pl"a\\nts/\u00e9\u00ff', 404, 'PLANT_NOT_FOUND', 12],
  ['x', 'DELETE', '/a\u0001b\u001f', 500, 'INTERNAL', 0],
];

test('the access line is the line logger.info writes for the same fields', () => {
  const lines: string[] = [];
  const log = createLogger({ logLevel: 'info' }, { write: (line: string) => void lines.push(line) });
  const access = accessLog(log);
  for (const [reqId, method, path, statusCode, code, ms] of CASES) {
    log.info({ reqId, method, path, statusCode, code, ms }, 'request completed');
    access(reqId, method, path, statusCode, code, ms);
  }
  assert.equal(lines.length, 2 * CASES.length);
  const timeless = (line: string) => line.replace(/^(\{"level":30,"time":)\d+,/, '$1T,');
  for (let i = 0; i < lines.length; i += 2) assert.equal(timeless(lines[i + 1]!), timeless(lines[i]!));
});

test('the access line follows the logger level', () => {
  const lines: string[] = [];
  const log = createLogger({ logLevel: 'warn' }, { write: (line: string) => void lines.push(line) });
  const access = accessLog(log);
  access('a', 'GET', '/', 200, undefined, 1);
  assert.equal(lines.length, 0);
  log.level = 'info';
  access('a', 'GET', '/', 200, undefined, 1);
  assert.equal(lines.length, 1);
});
