// A plant is written with its members in one order everywhere, on every engine: id, name, tag (the order of
// the document's NewPlant schema). Read one, list them, or create one (whose answer, the Plant, has no id).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startApp } from '../helpers/app.js';

test('plants are written id, name, tag: GET /plants/{id}, GET /plants, and name, tag in the answer to POST /plants', async (t) => {
  const s = await startApp(t);
  const created = await s.postPlant('{"tag": "tropical", "name": "Monstera deliciosa", "id": 9223372036854775805}');
  assert.equal(created.status, 200);
  assert.equal(await created.text(), '{"name":"Monstera deliciosa","tag":"tropical"}');
  assert.equal((await s.postPlant('{"name": "Pilea peperomioides", "id": -42}')).status, 200);

  const auth = { authorization: `Bearer ${s.token.read}` };
  const one = await fetch(`${s.url}/plants/9223372036854775805`, { headers: auth });
  assert.equal(await one.text(), '{"id":9223372036854775805,"name":"Monstera deliciosa","tag":"tropical"}');
  const untagged = await fetch(`${s.url}/plants/-42`, { headers: auth });
  assert.equal(await untagged.text(), '{"id":-42,"name":"Pilea peperomioides"}');

  for (const query of ['', '?after=-43', '?tag=tropical', '?tag=tropical&after=0']) {
    const page = await fetch(`${s.url}/plants${query}`, { headers: auth });
    // A list item ends with its version (the store's second and third writes).
    const expected = [
      ...(query.includes('tag') ? [] : ['{"id":-42,"name":"Pilea peperomioides","version":3}']),
      '{"id":9223372036854775805,"name":"Monstera deliciosa","tag":"tropical","version":2}',
    ];
    assert.equal(await page.text(), `[${expected.join(',')}]`, `GET /plants${query}`);
  }
});
