// A body over the configured limit (default 1 MiB) is 413, whether its length is announced or streamed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { errorOf, startApp } from '../helpers/app.js';
import { parseRawResponse, rawHttp } from '../helpers/raw-request.js';
import { rawError } from './support.js';
import { storedPlant } from '../helpers/stored-plant.js';

/** A valid NewPlant of exactly `size` bytes. */
function plantOfSize(id: number, size: number): string {
  const head = `{"id": ${id}, "name": "big", "pad": "`;
  const body = head + 'x'.repeat(size - head.length - 2) + '"}';
  assert.equal(Buffer.byteLength(body), size);
  return body;
}

test('a configured limit of 1024 bytes', async (t) => {
  const s = await startApp(t, { config: { bodyLimit: 1024 } });

  await t.test('exactly 1024 bytes is accepted', async () => {
    const res = await s.postPlant(plantOfSize(1, 1024));
    assert.equal(res.status, 200);
    assert.deepEqual(await storedPlant(s.store, 1n), { id: 1n, name: 'big' });
  });
  await t.test('1025 bytes is 413 naming the limit', async () => {
    const res = await s.postPlant(plantOfSize(2, 1025));
    assert.equal(res.status, 413);
    assert.match((await errorOf(res)).message, /1024/);
    assert.equal(await storedPlant(s.store, 2n), undefined);
  });
  await t.test('the limit counts bytes, not characters', async () => {
    // 400 three-byte characters: 400 characters, 1200+ bytes.
    const res = await s.postPlant(JSON.stringify({ id: 3, name: '\u20ac'.repeat(400) }));
    assert.equal(res.status, 413);
    await errorOf(res);
  });
  await t.test('a chunked body without Content-Length that grows past the limit is 413', async () => {
    const chunk = 'x'.repeat(600);
    const body = `{"id": 4, "name": "chunked", "pad": "${chunk}${chunk}"}`;
    const chunks = [body.slice(0, 700), body.slice(700)].map((c) => `${c.length.toString(16)}\r\n${c}\r\n`).join('');
    const request =
      `POST /plants HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer ${s.token.write}\r\nContent-Type: application/json\r\n` +
      `Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n${chunks}0\r\n\r\n`;
    await rawError(s.port, request, 413);
    assert.equal(await storedPlant(s.store, 4n), undefined);
  });
  await t.test('a small chunked body is accepted', async () => {
    const body = '{"id": 5, "name": "chunked"}';
    const request =
      `POST /plants HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer ${s.token.write}\r\nContent-Type: application/json\r\n` +
      `Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`;
    const res = parseRawResponse(await rawHttp(s.port, request, 200));
    assert.equal(res.status, 200);
    assert.deepEqual(await storedPlant(s.store, 5n), { id: 5n, name: 'chunked' });
  });
  await t.test('the server still answers afterwards', async () => {
    assert.equal((await s.postPlant('{"id": 6, "name": "after"}')).status, 200);
  });
});

test('the default limit is 1 MiB', async (t) => {
  const s = await startApp(t);
  await t.test('1.1 MiB is 413 naming 1048576', async () => {
    const res = await s.postPlant(plantOfSize(1, Math.round(1.1 * 1024 * 1024)));
    assert.equal(res.status, 413);
    assert.match((await errorOf(res)).message, /1048576/);
    assert.equal(await storedPlant(s.store, 1n), undefined);
  });
  await t.test('1 MiB + 1 byte is 413', async () => {
    const res = await s.postPlant(plantOfSize(2, 1024 * 1024 + 1));
    assert.equal(res.status, 413);
    await errorOf(res);
  });
  await t.test('exactly 1 MiB is accepted', async () => {
    const res = await s.postPlant(plantOfSize(3, 1024 * 1024));
    assert.equal(res.status, 200);
    assert.deepEqual(await storedPlant(s.store, 3n), { id: 3n, name: 'big' });
  });
});
