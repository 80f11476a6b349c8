import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError, describeConfig, loadConfig } from '../../src/config.js';

test('a headers deadline longer than the whole-request deadline is refused', () => {
  assert.throws(() => loadConfig({ HEADERS_TIMEOUT_MS: '20000', REQUEST_TIMEOUT_MS: '10000' }), (err: unknown) => {
    assert.ok(err instanceof ConfigError);
    assert.match(err.message, /HEADERS_TIMEOUT_MS/);
    return true;
  });
  assert.equal(loadConfig({ HEADERS_TIMEOUT_MS: '10000', REQUEST_TIMEOUT_MS: '10000' }).headersTimeoutMs, 10_000);
});

test('the token cache cannot outlive the 5-second revocation promise', () => {
  assert.throws(() => loadConfig({ TOKEN_CACHE_TTL_MS: '5000' }), /TOKEN_CACHE_TTL_MS/);
  assert.equal(loadConfig({ TOKEN_CACHE_TTL_MS: '4000' }).tokenCacheTtlMs, 4_000);
});

test('WORKERS: auto (any case, and the default) means one per core, shown as auto; a number is that many', () => {
  assert.equal(loadConfig({}).workers, 0);
  assert.equal(loadConfig({ WORKERS: 'AUTO' }).workers, 0);
  assert.equal(loadConfig({ WORKERS: '4' }).workers, 4);
  assert.ok(describeConfig(loadConfig({})).includes('WORKERS=auto'));
  assert.ok(describeConfig(loadConfig({ WORKERS: '3' })).includes('WORKERS=3'));
});
