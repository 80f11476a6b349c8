// RFC 6750 header handling: which Authorization headers are accepted, and the exact challenge for the rest.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { errorOf, startApp } from '../helpers/app.js';
import { parseRawResponse, rawHttp } from '../helpers/raw-request.js';
import { assertInvalidToken, postWith } from '../helpers/requests.js';
import { storedPlant } from '../helpers/stored-plant.js';

const PLAIN_CHALLENGE = 'Bearer realm="plant-store"';

let nextId = 1000;
const plant = () => ({ id: nextId++, name: 'fern' });

/** A raw POST /plants whose Authorization header lines are given as they go on the wire. */
function rawPost(authLines: (string | Buffer)[], body = JSON.stringify(plant())): Buffer {
  const parts: Buffer[] = [Buffer.from('POST /plants HTTP/1.1\r\nHost: 127.0.0.1\r\n')];
  for (const line of authLines) parts.push(Buffer.from('Authorization: '), Buffer.isBuffer(line) ? line : Buffer.from(line, 'latin1'), Buffer.from('\r\n'));
  parts.push(Buffer.from(`Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`));
  return Buffer.concat(parts);
}

function assertErrorShape(raw: { status: number; headers: Record<string, string>; body: string }): { error: number; message: string } {
  assert.match(raw.headers['content-type'] ?? '', /^application\/json/, `not a JSON answer: ${JSON.stringify(raw)}`);
  const body = JSON.parse(raw.body) as { error: number; message: string };
  assert.deepEqual(Object.keys(body).sort(), ['error', 'message']);
  assert.equal(body.error, raw.status);
  assert.ok(body.message.length > 0);
  return body;
}

async function assertPlainChallenge(res: Response): Promise<string> {
  assert.equal(res.status, 401);
  assert.equal(res.headers.get('www-authenticate'), PLAIN_CHALLENGE);
  return (await errorOf(res)).message;
}

test('a request without Authorization gets 401 with the bare Bearer challenge and an Error body', async (t) => {
  const s = await startApp(t);
  await assertPlainChallenge(await postWith(s, {}, plant()));
  assert.equal(await s.store.countPlants(), 0);
});

test('an empty bearer token gets 401 with the bare challenge and a message about the missing token', async (t) => {
  const s = await startApp(t);
  // fetch trims header values, so "Bearer " arrives as "Bearer".
  const message = await assertPlainChallenge(await postWith(s, { authorization: 'Bearer ' }, plant()));
  assert.match(message, /token/i);
  // On the wire, with trailing blanks kept by the client.
  for (const line of ['Bearer ', 'Bearer    ', 'bearer']) {
    const res = parseRawResponse(await rawHttp(s.port, rawPost([line])));
    assert.equal(res.status, 401, line);
    assert.equal(res.headers['www-authenticate'], PLAIN_CHALLENGE, line);
    assertErrorShape(res);
  }
  assert.equal(await s.store.countPlants(), 0);
});

test('another scheme, even carrying a valid token, gets 401 with the bare challenge', async (t) => {
  const s = await startApp(t);
  for (const header of [
    'Basic dXNlcjpwYXNzd29yZA==',
    `Basic ${Buffer.from(`x:${s.token.write}`).toString('base64')}`,
    `Token ${s.token.write}`,
    `Bearer:${s.token.write}`,
    `Bearer-${s.token.write}`,
    s.token.write,
    `Digest username="x", response="${s.token.write}"`,
  ]) {
    const res = await postWith(s, { authorization: header }, plant());
    assert.equal(res.status, 401, header);
    assert.equal(res.headers.get('www-authenticate'), PLAIN_CHALLENGE, header);
    await errorOf(res);
  }
  assert.equal(await s.store.countPlants(), 0);
});

test('garbage in the Authorization header gets 401, never 200 or a crash', async (t) => {
  const s = await startApp(t);
  for (const header of ['x', '!!!', 'Bearer', `Bearer ${s.token.write} extra`, `Bearer\t${s.token.write}`, '"Bearer" token']) {
    const res = await postWith(s, { authorization: header }, plant());
    assert.equal(res.status, 401, header);
    assert.ok((res.headers.get('www-authenticate') ?? '').startsWith(PLAIN_CHALLENGE), header);
    await errorOf(res);
  }
  assert.equal(await s.store.countPlants(), 0);
});

test('a well-formed token that was never issued gets 401 with error="invalid_token"', async (t) => {
  const s = await startApp(t);
  const neverIssued = 'pst_' + 'A'.repeat(43);
  assert.match(neverIssued, /^pst_[A-Za-z0-9_-]{43}$/);
  await assertInvalidToken(await postWith(s, neverIssued, plant()));
  // One character off a real token.
  const last = s.token.write.at(-1) === 'A' ? 'B' : 'A';
  await assertInvalidToken(await postWith(s, `${s.token.write.slice(0, -1)}${last}`, plant()));
  assert.equal(await s.store.countPlants(), 0);
});

test('a bearer token of the wrong shape gets 401 with error="invalid_token"', async (t) => {
  const s = await startApp(t);
  for (const token of ['pst_short', 'abc', `${s.token.write}x`, s.token.write.slice(4), `PST_${s.token.write.slice(4)}`, 'pst_' + '='.repeat(43)]) {
    await assertInvalidToken(await postWith(s, token, plant()));
  }
  assert.equal(await s.store.countPlants(), 0);
});

test('a token elsewhere than the Authorization header is not accepted', async (t) => {
  const s = await startApp(t);
  const headers = { 'content-type': 'application/json' };
  const body = JSON.stringify(plant());
  await assertPlainChallenge(await fetch(`${s.url}/plants?access_token=${s.token.write}`, { method: 'POST', headers, body }));
  await assertPlainChallenge(await fetch(`${s.url}/plants`, { method: 'POST', headers: { ...headers, 'x-api-key': s.token.write }, body }));
  await assertPlainChallenge(await fetch(`${s.url}/plants`, { method: 'POST', headers: { ...headers, cookie: `token=${s.token.write}` }, body }));
  assert.equal(await s.store.countPlants(), 0);
});

test('the scheme name is case-insensitive and any number of spaces may separate it from the token', async (t) => {
  const s = await startApp(t);
  for (const header of [`Bearer ${s.token.write}`, `bearer ${s.token.write}`, `BEARER ${s.token.write}`, `bEaReR ${s.token.write}`, `Bearer     ${s.token.write}`]) {
    const p = plant();
    const res = await postWith(s, { authorization: header }, p);
    assert.equal(res.status, 200, header);
    assert.deepEqual(await res.json(), { name: p.name });
    assert.deepEqual(await storedPlant(s.store, BigInt(p.id)), { id: BigInt(p.id), name: p.name });
  }
});

test('two Authorization headers are rejected with a 4xx Error body, even when both carry a valid token', async (t) => {
  const s = await startApp(t);
  const valid = `Bearer ${s.token.write}`;
  for (const lines of [[valid, valid], [valid, 'Bearer pst_' + 'A'.repeat(43)], ['Bearer pst_' + 'A'.repeat(43), valid], [valid, 'Basic dXNlcjpwYXNz']]) {
    const res = parseRawResponse(await rawHttp(s.port, rawPost(lines)));
    assert.ok(res.status >= 400 && res.status < 500, `${res.status} for ${lines.join(' | ')}`);
    assertErrorShape(res);
  }
  assert.equal(await s.store.countPlants(), 0);
  // A single header on the same path still works.
  const ok = parseRawResponse(await rawHttp(s.port, rawPost([valid])));
  assert.equal(ok.status, 200);
});

test('a 100 KB token is refused with an Error body and the server keeps serving', async (t) => {
  const s = await startApp(t);
  const raw = parseRawResponse(await rawHttp(s.port, rawPost([`Bearer pst_${'a'.repeat(100_000)}`])));
  assert.ok([400, 401, 431].includes(raw.status), String(raw.status));
  assertErrorShape(raw);
  // Just under Node's header limit it reaches the guard: an invalid token.
  await assertInvalidToken(await postWith(s, `pst_${'a'.repeat(8_000)}`, plant()));
  assert.equal((await s.postPlant(plant())).status, 200);
});

test('a token with non-ASCII bytes is refused with an Error body and the server keeps serving', async (t) => {
  const s = await startApp(t);
  const cases = [
    Buffer.concat([Buffer.from('Bearer pst_'), Buffer.from('ünïcødé€🌱'.repeat(4), 'utf8')]),
    Buffer.concat([Buffer.from(`Bearer ${s.token.write.slice(0, -1)}`), Buffer.from('é', 'utf8')]),
    Buffer.from([0x42, 0x65, 0x61, 0x72, 0x65, 0x72, 0x20, 0xff, 0xfe, 0x80]),
  ];
  for (const line of cases) {
    const raw = parseRawResponse(await rawHttp(s.port, rawPost([line])));
    assert.ok([400, 401].includes(raw.status), `${raw.status} for ${line.toString('hex')}`);
    assertErrorShape(raw);
  }
  assert.equal(await s.store.countPlants(), 0);
  assert.equal((await s.postPlant(plant())).status, 200);
});
