// Liveness and readiness: no authentication, JSON answers, and readiness that follows the store.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { errorOf, startApp } from '../helpers/app.js';
import { VERSION } from '../../src/health/version.js';

test('GET /healthz and /readyz answer 200 {"status":"ok"} without a token, and ignore a bad one', async (t) => {
  const s = await startApp(t);
  for (const path of ['/healthz', '/readyz']) {
    for (const headers of [{}, { authorization: 'Bearer not-a-token' }, { authorization: 'Basic Zm9vOmJhcg==' }] as Record<string, string>[]) {
      const res = await fetch(`${s.url}${path}`, { headers });
      assert.equal(res.status, 200, `${path} ${JSON.stringify(headers)}`);
      assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
      assert.equal(res.headers.get('www-authenticate'), null);
      assert.deepEqual(await res.json(), { status: 'ok', version: VERSION });
    }
  }
});

test('HEAD /healthz answers 200 with no body', async (t) => {
  const s = await startApp(t);
  const res = await fetch(`${s.url}/healthz`, { method: 'HEAD' });
  assert.equal(res.status, 200);
  assert.equal(await res.text(), '');
});

test('POST /healthz is a 405 Error naming the allowed methods', async (t) => {
  const s = await startApp(t);
  const res = await fetch(`${s.url}/healthz`, { method: 'POST' });
  assert.equal(res.status, 405);
  assert.match(res.headers.get('allow') ?? '', /GET/);
  await errorOf(res);
});

test('/readyz is a 503 Error once the store is closed, while /healthz (the process) stays 200', async (t) => {
  const s = await startApp(t);
  assert.equal((await fetch(`${s.url}/readyz`)).status, 200);
  await s.store.close();

  const ready = await fetch(`${s.url}/readyz`);
  assert.equal(ready.status, 503);
  const body = await errorOf(ready);
  assert.match(body.message, /store/i);

  const live = await fetch(`${s.url}/healthz`);
  assert.equal(live.status, 200);
  assert.deepEqual(await live.json(), { status: 'ok', version: VERSION });

  // Writes are refused with the same 503 shape rather than a crash or a 500.
  const write = await s.postPlant({ id: 1, name: 'after close' });
  assert.equal(write.status, 503);
  await errorOf(write);
});
