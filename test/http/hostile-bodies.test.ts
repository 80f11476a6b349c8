// Bodies built to break parsers: deep nesting, prototype-pollution keys, invalid UTF-8, lone surrogates and
// huge number literals. None may crash the server, corrupt the process or slip an invalid plant through.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { errorOf, startApp, type TestApp } from '../helpers/app.js';
import { postBytes } from './support.js';
import { storedPlant } from '../helpers/stored-plant.js';

async function assertServerAnswers(s: TestApp, id: number): Promise<void> {
  const res = await s.postPlant(`{"id": ${id}, "name": "still alive"}`);
  assert.equal(res.status, 200);
  assert.deepEqual(await storedPlant(s.store, BigInt(id)), { id: BigInt(id), name: 'still alive' });
}

/** 200 (the nesting sits in an ignored field) or 400, never a crash; a 200 stores exactly the plant. */
async function assertSurvives(s: TestApp, res: Response, id: bigint, name: string): Promise<void> {
  assert.ok(res.status === 200 || res.status === 400, `status ${res.status}`);
  if (res.status === 200) {
    assert.deepEqual(await res.json(), { name });
    assert.deepEqual(await storedPlant(s.store, id), { id, name });
  } else {
    await errorOf(res);
    assert.equal(await storedPlant(s.store, id), undefined);
  }
}

test('deep nesting never crashes the server', async (t) => {
  const s = await startApp(t);
  const depth = 100_000;
  const arrays = '['.repeat(depth) + ']'.repeat(depth);
  const objects = '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);

  await t.test('100 000 nested arrays in an unknown field (plain JSON.parse path)', async () => {
    const res = await s.postPlant(`{"id": 1, "name": "deep", "x": ${arrays}}`);
    await assertSurvives(s, res, 1n, 'deep');
  });
  await t.test('100 000 nested arrays in a body that also holds a long number (lossless path)', async () => {
    const res = await s.postPlant(`{"id": 9007199254740993, "name": "deep", "big": 123456789012345678901, "x": ${arrays}}`);
    await assertSurvives(s, res, 9007199254740993n, 'deep');
  });
  await t.test('a long number at the bottom of 100 000 nested arrays', async () => {
    const deep = '['.repeat(depth) + '12345678901234567890' + ']'.repeat(depth);
    const res = await s.postPlant(`{"id": 2, "name": "deep", "x": ${deep}}`);
    await assertSurvives(s, res, 2n, 'deep');
  });
  await t.test('100 000 nested objects, both paths', async () => {
    await assertSurvives(s, await s.postPlant(`{"id": 3, "name": "deep", "x": ${objects}}`), 3n, 'deep');
    const withBig = '{"a":'.repeat(depth) + '12345678901234567890' + '}'.repeat(depth);
    await assertSurvives(s, await s.postPlant(`{"id": 4, "name": "deep", "x": ${withBig}}`), 4n, 'deep');
  });
  await t.test('deep nesting as the whole body, unclosed, and as the id', async () => {
    for (const body of [arrays, '['.repeat(depth), `{"id": ${arrays}, "name": "x"}`, `{"id": 5, "name": ${arrays}}`]) {
      const res = await s.postPlant(body);
      assert.equal(res.status, 400);
      await errorOf(res);
    }
    assert.equal(await storedPlant(s.store, 5n), undefined);
  });
  await t.test('the server still answers', async () => {
    await assertServerAnswers(s, 6);
  });
});

test('prototype-pollution keys neither pollute nor smuggle fields', async (t) => {
  const s = await startApp(t);
  t.after(() => {
    // Undo any pollution so a failure here cannot leak into other tests of this process.
    for (const key of ['polluted', 'id', 'name']) delete (Object.prototype as Record<string, unknown>)[key];
  });
  const clean = () => {
    const probe = {} as Record<string, unknown>;
    assert.equal(probe.polluted, undefined, 'Object.prototype was polluted');
    assert.equal(probe.id, undefined, 'Object.prototype got an id');
    assert.equal(probe.name, undefined, 'Object.prototype got a name');
    assert.equal(Object.prototype.hasOwnProperty.call(Object.prototype, 'polluted'), false);
  };

  const pollution = '"__proto__": {"polluted": "yes", "id": 66}, "constructor": {"prototype": {"polluted": "yes"}}, "prototype": {"polluted": "yes"}';
  await t.test('as ignored unknown fields, plain path', async () => {
    const res = await s.postPlant(`{"id": 1, "name": "p", ${pollution}}`);
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { name: 'p' });
    assert.deepEqual(await storedPlant(s.store, 1n), { id: 1n, name: 'p' });
    clean();
  });
  await t.test('as ignored unknown fields, lossless path, with long numbers inside them', async () => {
    const res = await s.postPlant(
      `{"id": 9007199254740995, "name": "p", "__proto__": {"polluted": 12345678901234567890, "__proto__": 98765432109876543210}, "constructor": {"prototype": {"polluted": 1e400}}, "prototype": {"polluted": "yes"}}`,
    );
    assert.equal(res.status, 200);
    assert.deepEqual(await storedPlant(s.store, 9007199254740995n), { id: 9007199254740995n, name: 'p' });
    clean();
  });
  await t.test('named twice: refused as a repeated member (I-JSON), polluting nothing', async () => {
    const res = await s.postPlant(`{"id": 3, "name": "p", "__proto__": {"polluted": 12345678901234567890}, ${pollution}}`);
    assert.equal(res.status, 400);
    assert.match(((await res.json()) as { message: string }).message, /member '__proto__' twice/);
    assert.equal(await storedPlant(s.store, 3n), undefined);
    clean();
  });
  await t.test('nested pollution keys inside arrays and objects', async () => {
    const res = await s.postPlant(`{"id": 2, "name": "p", "a": [{"__proto__": {"polluted": true}}, {"constructor": {"prototype": {"polluted": 1}}}], "b": {"c": {${pollution}}}}`);
    assert.equal(res.status, 200);
    clean();
  });
  const smuggles: Array<[string, string]> = [
    ['a missing id through __proto__', '{"name": "x", "__proto__": {"id": 5}}'],
    ['a missing id through __proto__, lossless path', '{"name": "x", "__proto__": {"id": 9007199254740993}, "pad": 12345678901234567890}'],
    ['a missing id through constructor.prototype', '{"name": "x", "constructor": {"prototype": {"id": 5}}}'],
    ['a missing name through __proto__', '{"id": 5, "__proto__": {"name": "x"}}'],
    ['a missing name through __proto__, lossless path', '{"id": 9007199254740993, "__proto__": {"name": "x"}}'],
    ['an id that is __proto__ itself', '{"id": {"__proto__": 5}, "name": "x"}'],
    ['an invalid tag hidden behind __proto__', '{"id": 5, "name": "x", "tag": null, "__proto__": {"tag": "ok"}}'],
  ];
  for (const [label, body] of smuggles) {
    await t.test(`${label} -> 400`, async () => {
      const res = await s.postPlant(body);
      assert.equal(res.status, 400);
      await errorOf(res);
      clean();
    });
  }
  await t.test('nothing was stored under the smuggled ids', async () => {
    assert.equal(await storedPlant(s.store, 5n), undefined);
    assert.equal(await storedPlant(s.store, 66n), undefined);
    assert.equal(await storedPlant(s.store, 9007199254740993n), undefined);
  });
  await t.test('the server still answers', async () => {
    await assertServerAnswers(s, 3);
    clean();
  });
});

test('invalid UTF-8 is 400; unpaired surrogates never reach a stored name or tag', async (t) => {
  const s = await startApp(t);
  const withBytes = (prefix: string, bytes: number[], suffix: string) =>
    Buffer.concat([Buffer.from(prefix, 'utf8'), Buffer.from(bytes), Buffer.from(suffix, 'utf8')]);
  const invalid: Array<[string, Buffer]> = [
    ['0xff in name', withBytes('{"id": 1, "name": "a', [0xff], 'b"}')],
    ['an overlong "/" (C0 AF)', withBytes('{"id": 1, "name": "a', [0xc0, 0xaf], '"}')],
    ['a UTF-8-encoded surrogate (ED A0 80)', withBytes('{"id": 1, "name": "a', [0xed, 0xa0, 0x80], '"}')],
    ['a truncated 3-byte sequence', withBytes('{"id": 1, "name": "a', [0xe2, 0x82], '"}')],
    ['a lone continuation byte', withBytes('{"id": 1, "name": "a', [0x80], '"}')],
    ['a code point above U+10FFFF (F4 90 80 80)', withBytes('{"id": 1, "name": "a', [0xf4, 0x90, 0x80, 0x80], '"}')],
    ['invalid bytes in an ignored field', withBytes('{"id": 1, "name": "a", "x": "', [0xfe], '"}')],
    ['invalid bytes in a key', withBytes('{"id": 1, "name": "a", "', [0xff], '": 1}')],
    ['latin-1 text', Buffer.from('{"id": 1, "name": "caf\u00e9"}', 'latin1')],
    ['truncated at the very end', withBytes('{"id": 1, "name": "a"}', [0xf0, 0x9f], '')],
    ['invalid bytes with a long number (lossless path)', withBytes('{"id": 9007199254740993, "name": "', [0xff], '"}')],
  ];
  for (const [label, bytes] of invalid) {
    await t.test(`${label} -> 400`, async () => {
      const res = await postBytes(s, new Uint8Array(bytes), { 'content-type': 'application/json' });
      assert.equal(res.status, 400);
      assert.match((await errorOf(res)).message, /UTF-8/);
    });
  }
  await t.test('valid multi-byte UTF-8 sent as bytes is stored exactly', async () => {
    const name = 'caf\u00e9 \u{1f33f}';
    const res = await postBytes(s, new Uint8Array(Buffer.from(`{"id": 2, "name": "${name}"}`, 'utf8')), { 'content-type': 'application/json' });
    assert.equal(res.status, 200);
    assert.deepEqual(await storedPlant(s.store, 2n), { id: 2n, name });
  });

  const surrogates: Array<[string, string]> = [
    ['a lone high surrogate in name', '{"id": 3, "name": "\\ud800"}'],
    ['a lone low surrogate in name', '{"id": 3, "name": "a\\udc00b"}'],
    ['reversed pair in name', '{"id": 3, "name": "\\udf3f\\ud83c"}'],
    ['a lone surrogate in tag', '{"id": 3, "name": "ok", "tag": "\\udbff"}'],
    ['a lone surrogate with a long id (lossless path)', '{"id": 9223372036854775807, "name": "\\ud800"}'],
  ];
  for (const [label, body] of surrogates) {
    await t.test(`${label} -> 400`, async () => {
      const res = await s.postPlant(body);
      assert.equal(res.status, 400);
      await errorOf(res);
    });
  }
  await t.test('nothing stored under the rejected ids', async () => {
    assert.equal(await storedPlant(s.store, 1n), undefined);
    assert.equal(await storedPlant(s.store, 3n), undefined);
    assert.equal(await storedPlant(s.store, 9007199254740993n), undefined);
    assert.equal(await storedPlant(s.store, 9223372036854775807n), undefined);
  });
  await t.test('an escaped surrogate pair is a valid character, stored and replayed exactly', async () => {
    const body = '{"id": 4, "name": "\\ud83c\\udf3f", "tag": "\\uD83C\\uDF35"}';
    const res = await s.postPlant(body);
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { name: '\u{1f33f}', tag: '\u{1f335}' });
    assert.deepEqual(await storedPlant(s.store, 4n), { id: 4n, name: '\u{1f33f}', tag: '\u{1f335}' });
    assert.equal((await s.postPlant(body)).status, 200, 'replay');
  });
  await t.test('a lone surrogate in an ignored field is ignored with it', async () => {
    const res = await s.postPlant('{"id": 5, "name": "ok", "note": "\\ud800"}');
    assert.equal(res.status, 200);
    assert.deepEqual(await storedPlant(s.store, 5n), { id: 5n, name: 'ok' });
  });
  await t.test('the server still answers', async () => {
    await assertServerAnswers(s, 6);
  });
});

test('huge number literals are answered promptly', async (t) => {
  const s = await startApp(t);
  // Each literal below is ~900 KB: parsing must stay linear in its length.
  const inner = '1' + '0'.repeat(450_000) + '1' + '0'.repeat(450_000) + '1';
  const cases: Array<[string, string, number]> = [
    ['an integer with zeros inside, ignored field', `{"id": 1, "name": "n", "x": ${inner}}`, 200],
    ['a fraction with zeros inside, ignored field', `{"id": 2, "name": "n", "x": 1.${'0'.repeat(900_000)}1}`, 200],
    ['an integer with trailing zeros and a negative exponent, ignored field', `{"id": 3, "name": "n", "x": 1${'0'.repeat(900_000)}e-900000}`, 200],
    ['the same literal as the id', `{"id": ${inner}, "name": "n"}`, 400],
    // An int64, but not written as a plain integer: refused, and promptly.
    ['a huge literal that is exactly an int64 once scaled', `{"id": 9${'0'.repeat(900_000)}e-900000, "name": "n"}`, 400],
  ];
  for (const [label, body, status] of cases) {
    await t.test(`${label} -> ${status}`, async () => {
      const started = performance.now();
      const res = await s.postPlant(body);
      const ms = performance.now() - started;
      assert.equal(res.status, status);
      if (status !== 200) await errorOf(res);
      else await res.arrayBuffer();
      assert.ok(ms < 3_000, `took ${Math.round(ms)} ms`);
    });
  }
  await t.test('the scaled literal stored nothing', async () => {
    assert.equal(await storedPlant(s.store, 9n), undefined);
  });
  await t.test('the server still answers', async () => {
    await assertServerAnswers(s, 10);
  });
});
