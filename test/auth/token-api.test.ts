// Tokens over HTTP, from a client's side: a token with tokens:manage lists, makes and revokes tokens, and never
// grants a scope it lacks; any token reads what it is (GET /tokens/current); bad bodies are 400 with the Error
// body; the secret is shown once and appears in no list and no log line.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startApp } from '../helpers/app.js';
import { clientError, clientFor } from '../helpers/client.js';
import { capturedLogger } from '../helpers/log-lines.js';
import { eventually } from '../helpers/sleep.js';

const SECRET = /^pst_[A-Za-z0-9_-]{43}$/;

test('a tokens:manage token makes a token with some of its scopes, never granting more, lists it without its secret, and revokes it', async (t) => {
  const { lines, logger } = capturedLogger('info');
  const s = await startApp(t, { logger });
  const admin = await s.tokens.create({ name: 'admin', scopes: ['tokens:manage', 'plants:read', 'plants:write'] });
  const api = clientFor(s, admin.secret);

  const me = await api.GET('/tokens/current');
  assert.deepEqual(me.data, { id: admin.token.id, name: 'admin', scopes: ['tokens:manage', 'plants:read', 'plants:write'] });

  const before = (await api.GET('/tokens', {})).data!.length;
  const made = await api.POST('/tokens', { body: { name: 'greenhouse reader', scopes: ['plants:read'] } });
  assert.equal(made.response.status, 201);
  const reader = made.data!;
  assert.match(reader.secret, SECRET);
  assert.deepEqual({ ...reader, id: '', createdAt: '', secret: '' }, { id: '', name: 'greenhouse reader', scopes: ['plants:read'], createdAt: '', secret: '' });

  // The secret works, with the scopes asked for and no more.
  const asReader = clientFor(s, reader.secret);
  assert.equal((await asReader.GET('/plants', { params: { query: {} } })).response.status, 200);
  clientError(await asReader.POST('/plants', { body: { id: 1n, name: 'Fern' } }), 403, 'a plants:read token writes');
  assert.deepEqual((await asReader.GET('/tokens/current')).data, { id: reader.id, name: 'greenhouse reader', scopes: ['plants:read'] });

  // A scope the maker lacks: refused, naming what is missing, and nothing is made.
  const over = clientError(await api.POST('/tokens', { body: { name: 'too much', scopes: ['plants:read', 'metrics:read', 'webhooks:manage'] } }), 403, 'granting more');
  assert.match(over.message, /lacks metrics:read and webhooks:manage/);
  const listed = await api.GET('/tokens', {});
  assert.equal(listed.data!.length, before + 1);
  assert.ok(!listed.data!.some((x) => x.name === 'too much'));

  // Listed oldest first, without the secret; pages follow the Link header.
  const text = JSON.stringify(listed.data);
  assert.ok(!text.includes(reader.secret) && !text.includes(reader.secret.slice(4, 30)), 'a secret is listed');
  const entry = listed.data!.at(-1)!;
  assert.deepEqual(Object.keys(entry).sort(), ['createdAt', 'id', 'name', 'scopes']);
  assert.equal(entry.id, reader.id);
  const walked: string[] = [];
  let query: { limit: number; after?: string } | undefined = { limit: 2 };
  while (query) {
    const page = await api.GET('/tokens', { params: { query } });
    walked.push(...page.data!.map((x) => x.id));
    const next = /<\/tokens\?limit=2&after=([^>]+)>; rel="next"/.exec(page.response.headers.get('link') ?? '');
    query = next ? { limit: 2, after: decodeURIComponent(next[1]!) } : undefined;
  }
  assert.deepEqual(walked, listed.data!.map((x) => x.id));
  clientError(await api.GET('/tokens', { params: { query: { after: 'tok_nosuchtoken' } } }), 400, 'after an unknown token');

  // Revoked: refused from then on; revoking again is 204 too; an unknown id is 404.
  assert.equal((await api.DELETE('/tokens/{id}', { params: { path: { id: reader.id } } })).response.status, 204);
  await eventually(async () => (await asReader.GET('/plants', { params: { query: {} } })).response.status === 401, 'the revoked token refused');
  assert.equal((await api.DELETE('/tokens/{id}', { params: { path: { id: reader.id } } })).response.status, 204);
  clientError(await api.DELETE('/tokens/{id}', { params: { path: { id: 'tok_nosuchtoken' } } }), 404, 'an unknown token');
  const after = (await api.GET('/tokens', {})).data!.find((x) => x.id === reader.id)!;
  assert.match(after.revokedAt ?? '', /^\d{4}-\d\d-\d\dT/);

  // The audit lines name both ids; no line holds the secret.
  const log = lines.map((l) => JSON.stringify(l));
  assert.ok(lines.some((l) => l.msg === 'token created' && l.tokenId === reader.id && l.callerId === admin.token.id), log.join('\n'));
  assert.ok(lines.some((l) => l.msg === 'token revoked' && l.tokenId === reader.id && l.callerId === admin.token.id), log.join('\n'));
  assert.ok(!log.some((l) => l.includes(reader.secret.slice(4, 30)) || l.includes(admin.secret.slice(4, 30))), 'a secret is in the log');
});

test('a token without tokens:manage reads only itself; a ticket cannot; bad bodies are 400 with the Error body', async (t) => {
  const s = await startApp(t);
  const reader = clientFor(s, s.token.read);
  assert.deepEqual((await reader.GET('/tokens/current')).data?.scopes, ['plants:read']);
  for (const [what, result] of [
    ['list', await reader.GET('/tokens', {})],
    ['create', await reader.POST('/tokens', { body: { name: 'x', scopes: ['plants:read'] } })],
    ['revoke', await reader.DELETE('/tokens/{id}', { params: { path: { id: 'tok_x' } } })],
  ] as const) {
    assert.match(clientError(result, 403, what).message, /tokens:manage/);
  }
  const { ticket } = (await reader.POST('/events/tickets')).data!;
  clientError(await fetch(`${s.url}/tokens/current?ticket=${ticket}`).then(async (response) => ({ response, error: await response.json() })), 401, 'a ticket');

  const admin = (await s.tokens.create({ name: 'admin', scopes: ['tokens:manage', 'plants:read'] })).secret;
  const count = (await s.tokens.list()).length;
  const post = (body: string) =>
    fetch(`${s.url}/tokens`, { method: 'POST', headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' }, body }).then(async (response) => ({
      response,
      error: await response.json(),
    }));
  for (const [body, says] of [
    ['{"scopes":["plants:read"]}', /name/],
    ['{"name":"","scopes":["plants:read"]}', /name/],
    [JSON.stringify({ name: 'x'.repeat(101), scopes: ['plants:read'] }), /name/],
    [JSON.stringify({ name: 'line\nbreak', scopes: ['plants:read'] }), /^body\/name must not contain control characters/],
    ['{"name":"x","scopes":[]}', /scopes/],
    ['{"name":"x","scopes":["plants:read","plants:read"]}', /scopes/],
    ['{"name":"x","scopes":["plants:everything"]}', /scopes/],
    ['{"name":"x","scopes":"plants:read"}', /scopes/],
    ['{"name":"x","scopes":["plants:read"],"expiresAt":"tomorrow"}', /expiresAt/],
    ['{"name":"x","scopes":["plants:read"],"expiresAt":"2001-01-01T00:00:00Z"}', /expiresAt.*not in the future/],
    ['{"name":"x","scopes":["plants:read"]', /JSON/],
  ] as const) {
    assert.match(clientError(await post(body), 400, body).message, says, body);
  }
  assert.equal((await s.tokens.list()).length, count, 'a bad body made a token');
});
