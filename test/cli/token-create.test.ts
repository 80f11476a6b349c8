// `plant-store token create`: prints the new token alone on the last line, which then works against a server
// on the same database; bad arguments exit 2 with a message on stderr and touch nothing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { errorOf, migratedDatabaseUrl, runCli, startApp, tempDir } from '../helpers/app.js';
import { lastLine, listedTokens } from '../helpers/cli.js';
import { storedPlant } from '../helpers/stored-plant.js';

const TOKEN = /^pst_[A-Za-z0-9_-]{43}$/;

test('token create prints the token alone on the last line, and it works against a server on the same database', async (t) => {
  const databaseUrl = await migratedDatabaseUrl(t);
  const env = { DATABASE_URL: databaseUrl };
  const both = await runCli(['token', 'create', '--scopes', 'plants:read,plants:write', '--name', 'ci'], env);
  const readOnly = await runCli(['token', 'create', '--scopes', 'plants:read', '--name', 'reader'], env);
  for (const res of [both, readOnly]) {
    assert.equal(res.code, 0, res.stderr);
    assert.match(lastLine(res.stdout), TOKEN);
    // Shown exactly once.
    assert.equal(res.stdout.split(lastLine(res.stdout)).length, 2);
  }
  assert.match(both.stdout, /tok_[A-Za-z0-9_-]+/);
  assert.match(both.stdout, /ci/);
  assert.notEqual(lastLine(both.stdout), lastLine(readOnly.stdout));

  const s = await startApp(t, { databaseUrl });
  const created = await s.postPlant({ id: 1, name: 'fern' }, { authorization: `Bearer ${lastLine(both.stdout)}` });
  assert.equal(created.status, 200);
  assert.deepEqual(await storedPlant(s.store, 1n), { id: 1n, name: 'fern' });
  const refused = await s.postPlant({ id: 2, name: 'fern' }, { authorization: `Bearer ${lastLine(readOnly.stdout)}` });
  assert.equal(refused.status, 403);
  await errorOf(refused);

  const list = await listedTokens(env);
  const ci = list.find((r) => r.name === 'ci');
  assert.equal(ci?.scopes, 'plants:read plants:write');
  assert.equal(ci?.expires, null);
  assert.equal(list.find((r) => r.name === 'reader')?.scopes, 'plants:read');
});

test('token create --expires sets the expiry: a duration from now, or an ISO 8601 date', async (t) => {
  const env = { DATABASE_URL: await migratedDatabaseUrl(t) };
  const before = Date.now();
  const month = await runCli(['token', 'create', '--scopes', 'plants:write', '--name', 'month', '--expires', '30d'], env);
  const results = await Promise.all([
    Promise.resolve(month),
    runCli(['token', 'create', '--scopes', 'plants:write', '--name', 'hours', '--expires', '12h'], env),
    runCli(['token', 'create', '--scopes', 'plants:write', '--name', 'date', '--expires', '2999-01-31'], env),
    runCli(['token', 'create', '--scopes', 'plants:write', '--name', 'datetime', '--expires', '2999-01-31T12:30:00+02:00'], env),
  ]);
  const after = Date.now();
  for (const res of results) {
    assert.equal(res.code, 0, res.stderr);
    assert.match(lastLine(res.stdout), TOKEN);
  }
  const byName = new Map((await listedTokens(env)).map((r) => [r.name, r]));
  const expires = (name: string) => Date.parse(byName.get(name)?.expires ?? 'missing');
  const day = 86_400_000;
  assert.ok(expires('month') >= before + 30 * day && expires('month') <= after + 30 * day, String(byName.get('month')?.expires));
  assert.ok(expires('hours') >= before + day / 2 && expires('hours') <= after + day / 2, String(byName.get('hours')?.expires));
  assert.equal(byName.get('date')?.expires, '2999-01-31T00:00:00.000Z');
  assert.equal(byName.get('datetime')?.expires, '2999-01-31T10:30:00.000Z');

  // A token with an expiry works until then.
  const s = await startApp(t, { databaseUrl: env.DATABASE_URL });
  const res = await s.postPlant({ id: 1, name: 'fern' }, { authorization: `Bearer ${lastLine(results[0]!.stdout)}` });
  assert.equal(res.status, 200);
});

test('bad arguments exit 2 with a message on stderr, print no token and create no database', async (t) => {
  const file = join(tempDir(t), 'x.db');
  const env = { DATABASE_URL: `sqlite:${file}` };
  const cases: Array<[string[], RegExp]> = [
    [['--scopes', 'plants:read,plants:delete', '--name', 'ci'], /plants:delete/],
    [['--scopes', 'plants:read'], /--name/],
    [['--scopes', 'plants:read', '--name', 'line\nbreak'], /--name/],
    [['--name', 'ci'], /--scopes/],
    [['--scopes', 'plants:read', '--name', 'ci', '--expires', 'soon'], /expires|duration|date/i],
    [['--scopes', 'plants:read', '--name', 'ci', '--expires', '0d'], /future/],
    [['--scopes', 'plants:read', '--name', 'ci', '--expires', '2001-01-01'], /future/],
    [['--scopes', 'plants:read', '--name', 'ci', '--expires', '1/2/2999'], /duration|date/i],
    [['--scopes', 'plants:read', '--name', 'ci', '--expires', '2999-02-30'], /duration|date/i],
    [['--scopes', 'plants:read', '--name', 'ci', '--bogus'], /bogus/],
  ];
  const results = await Promise.all(cases.map(([args]) => runCli(['token', 'create', ...args], env)));
  results.forEach((res, i) => {
    const [args, message] = cases[i]!;
    assert.equal(res.code, 2, `${JSON.stringify(args)}: exit ${res.code}\n${res.stdout}${res.stderr}`);
    assert.match(res.stderr, message, JSON.stringify(args));
    assert.doesNotMatch(res.stdout, /pst_/, JSON.stringify(args));
  });
  assert.equal(existsSync(file), false, 'a usage error created the database');
});
