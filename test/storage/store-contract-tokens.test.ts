// The Store port's promises about API tokens, on the store under test (PLANT_STORE_TEST_STORE): insert, find by
// hash and by id, list and page in creation order, revoke, and the last use.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { TokenRecord } from '../../src/auth/token.js';
import { freshStore } from '../helpers/contract-store.js';

test('tokens: insert, findTokenByHash, list in creation order (ties in insertion order), revoke once (twice is false), touchTokens keeps the latest use', async (t) => {
  const store = await freshStore(t);
  const base = Date.UTC(2026, 0, 1);
  const token = (n: number, extra: Partial<TokenRecord> = {}): TokenRecord => ({
    id: `tok_${n}`,
    name: `token ${n}`,
    hash: String(n).repeat(64).slice(0, 64),
    scopes: ['plants:read', 'plants:write'],
    createdAt: new Date(base + n * 1_000),
    lastUsedAt: null,
    expiresAt: null,
    revokedAt: null,
    ...extra,
  });
  const later = token(3, { scopes: ['metrics:read'], expiresAt: new Date(base + 86_400_000) });
  // Inserted out of creation order.
  for (const tk of [later, token(1), token(2)]) await store.insertToken(tk);
  assert.equal(await store.countTokens(), 3);
  assert.deepEqual(await store.findTokenByHash(later.hash), later);
  assert.equal(await store.findTokenByHash('f'.repeat(64)), undefined);
  assert.deepEqual((await store.listTokens()).map((tk) => tk.id), ['tok_1', 'tok_2', 'tok_3']);

  const revokedAt = new Date(base + 5_000);
  assert.equal(await store.revokeToken('tok_2', revokedAt), true);
  assert.equal(await store.revokeToken('tok_2', new Date(base + 9_000)), false, 'revoked twice');
  assert.equal(await store.revokeToken('tok_none', revokedAt), false);
  assert.deepEqual((await store.findTokenByHash(token(2).hash))!.revokedAt, revokedAt);

  await store.touchTokens(new Map());
  await store.touchTokens(new Map([['tok_1', new Date(base + 7_000)], ['tok_3', new Date(base + 8_000)], ['tok_none', new Date(base)]]));
  // An older use reported late does not move last use back.
  await store.touchTokens(new Map([['tok_1', new Date(base + 6_000)]]));
  const listed = new Map((await store.listTokens()).map((tk) => [tk.id, tk]));
  assert.deepEqual(listed.get('tok_1')!.lastUsedAt, new Date(base + 7_000));
  assert.deepEqual(listed.get('tok_3')!.lastUsedAt, new Date(base + 8_000));
  assert.equal(listed.get('tok_2')!.lastUsedAt, null);
  assert.deepEqual(listed.get('tok_3'), { ...later, lastUsedAt: new Date(base + 8_000) });
  assert.equal(await store.countTokens(), 3);

  // Tokens made in the same millisecond list in the order they were made, on every engine.
  for (const n of [9, 8]) await store.insertToken({ ...token(n), createdAt: new Date(base + 60_000) });
  assert.deepEqual((await store.listTokens()).map((tk) => tk.id), ['tok_1', 'tok_2', 'tok_3', 'tok_9', 'tok_8']);

  // Pages in the same order, each after the id the last one ended with; one token by its id.
  const pages = [await store.tokensPage(2)];
  pages.push(await store.tokensPage(2, pages[0]!.at(-1)!.id));
  pages.push(await store.tokensPage(2, pages[1]!.at(-1)!.id));
  assert.deepEqual(pages.map((p) => p.map((tk) => tk.id)), [['tok_1', 'tok_2'], ['tok_3', 'tok_9'], ['tok_8']]);
  assert.deepEqual(pages[1]![0], { ...later, lastUsedAt: new Date(base + 8_000) });
  assert.deepEqual(await store.tokensPage(2, 'tok_8'), []);
  assert.deepEqual((await store.findTokenById('tok_2'))!.revokedAt, revokedAt);
  assert.equal(await store.findTokenById('tok_none'), undefined);
});
