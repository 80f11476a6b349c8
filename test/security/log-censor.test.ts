// The logger censors Authorization wherever a logged object could carry it, without changing the caller's object.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { capturedLogger as capture } from '../helpers/log-lines.js';

test('an Authorization value under headers, req.headers or any field is written as [redacted]', () => {
  const { lines, logger } = capture();
  const headers = { authorization: 'Bearer pst_secret', accept: 'x' };
  const fields = { headers, req: { method: 'GET', headers: { authorization: 'Bearer pst_other' } }, upstream: { authorization: 'Basic abc' }, n: 1 };
  logger.info(fields, 'with headers');
  assert.equal(lines.length, 1);
  const line = lines[0]!;
  assert.equal(line.headers.authorization, '[redacted]');
  assert.equal(line.headers.accept, 'x');
  assert.equal(line.req.headers.authorization, '[redacted]');
  assert.equal(line.req.method, 'GET');
  assert.equal(line.upstream.authorization, '[redacted]');
  assert.equal(line.n, 1);
  assert.doesNotMatch(JSON.stringify(lines), /pst_|Basic abc/);
  // The caller's objects are untouched.
  assert.equal(headers.authorization, 'Bearer pst_secret');
  assert.equal(fields.req.headers.authorization, 'Bearer pst_other');
});

test('lines without such fields are written as given', () => {
  const { lines, logger } = capture();
  logger.info({ method: 'GET', path: '/plants', statusCode: 200 }, 'request completed');
  assert.equal(lines[0]!.path, '/plants');
  assert.equal(lines[0]!.msg, 'request completed');
});
