// NewPlant field rules: name is a required string, tag an optional string (null is not a string), id required.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { errorOf, startApp } from '../helpers/app.js';
import { storedPlant } from '../helpers/stored-plant.js';

test('POST /plants rejects a NewPlant whose fields break the schema', async (t) => {
  const s = await startApp(t);

  const rejected: Array<[string, string, RegExp]> = [
    ['name missing', '{"id": 1}', /name/],
    ['name null', '{"id": 1, "name": null}', /name/],
    ['name a number', '{"id": 1, "name": 5}', /name/],
    ['name a boolean', '{"id": 1, "name": true}', /name/],
    ['name an array', '{"id": 1, "name": ["fern"]}', /name/],
    ['name an object', '{"id": 1, "name": {"text": "fern"}}', /name/],
    ['tag null', '{"id": 1, "name": "fern", "tag": null}', /tag/],
    ['tag a number', '{"id": 1, "name": "fern", "tag": 3}', /tag/],
    ['tag a boolean', '{"id": 1, "name": "fern", "tag": false}', /tag/],
    ['tag an array', '{"id": 1, "name": "fern", "tag": ["a"]}', /tag/],
    ['tag an object', '{"id": 1, "name": "fern", "tag": {}}', /tag/],
    ['id missing', '{"name": "fern"}', /id/],
    ['id and name missing', '{}', /id|name/],
    ['only unknown fields', '{"plant": {"id": 1, "name": "fern"}}', /id|name/],
    ['NAME in the wrong case', '{"id": 1, "NAME": "fern"}', /name/],
  ];
  for (const [label, body, mentions] of rejected) {
    await t.test(`${label} -> 400 Error naming the field`, async () => {
      const res = await s.postPlant(body);
      assert.equal(res.status, 400);
      const err = await errorOf(res);
      assert.match(err.message, mentions);
    });
  }

  await t.test('nothing was stored by any rejected request', async () => {
    assert.equal(await s.store.countPlants(), 0);
    assert.equal(await storedPlant(s.store, 1n), undefined);
  });

  await t.test('the same id with valid fields is then accepted (rejections left no trace)', async () => {
    const res = await s.postPlant('{"id": 1, "name": "fern"}');
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { name: 'fern' });
  });
});
