// First start on a store without tokens: `plant-store serve` creates one with every scope and prints it once,
// with a line on how to use it. Later starts, stores that already have tokens and BOOTSTRAP_TOKEN=false print none.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { errorOf, freshDatabaseUrl, migratedDatabaseUrl, runCli, spawnServer, tempDir } from '../helpers/app.js';
import { listedTokens } from '../helpers/cli.js';
import { postWith } from '../helpers/requests.js';
import { eventually } from '../helpers/sleep.js';

const TOKEN_IN_TEXT = /pst_[A-Za-z0-9_-]{43}/g;

/** A server once its start line is out, which comes after the first token's banner, if one is printed. */
async function started(t: TestContext, env: Record<string, string>) {
  const server = await spawnServer(t, env);
  await eventually(() => server.stdout().includes('plant-store is listening'), 'the start line', 20_000);
  return server;
}

test('the first start on an empty store prints one token with every scope and how to use it; the next start prints none', async (t) => {
  const file = join(tempDir(t), 'data', 'x.db');
  const env = { DATABASE_URL: `sqlite:${file}` };
  assert.equal(existsSync(file), false);

  const first = await started(t, env);
  const tokens = [...new Set(first.stdout().match(TOKEN_IN_TEXT) ?? [])];
  assert.equal(tokens.length, 1, `expected one token on stdout:\n${first.stdout()}`);
  const secret = tokens[0]!;
  const lines = first.stdout().split('\n');
  // Shown on a line of its own (easy to copy) and in a usage line.
  assert.ok(lines.some((l) => l.trim() === secret), 'the token is not on a line of its own');
  assert.ok(lines.some((l) => l.includes(`Authorization: Bearer ${secret}`)), 'no line shows how to use the token');
  assert.doesNotMatch(first.stderr(), TOKEN_IN_TEXT);
  // Never inside a structured log line.
  for (const line of lines.filter((l) => l.startsWith('{'))) assert.ok(!line.includes(secret), line);

  // It works, and carries every scope.
  assert.equal((await postWith(first.url, secret, 1)).status, 200);
  const list = await listedTokens<{ id: string; name: string; scopes: string }>(env);
  assert.equal(list.length, 1);
  assert.deepEqual(list[0]!.scopes.split(' ').sort(), ['metrics:read', 'plants:read', 'plants:write', 'tokens:manage', 'webhooks:manage']);
  assert.ok(first.stdout().includes(list[0]!.id), 'the banner does not name the token id');

  first.proc.kill('SIGTERM');
  assert.equal(await first.exited, 0);

  const second = await started(t, env);
  assert.doesNotMatch(second.stdout() + second.stderr(), /pst_/);
  assert.equal((await postWith(second.url, secret, 2)).status, 200);
  assert.equal((await listedTokens<{ id: string; name: string; scopes: string }>(env)).length, 1);
});

test('with BOOTSTRAP_TOKEN=false the first start creates and prints no token', async (t) => {
  const env = { DATABASE_URL: (await freshDatabaseUrl(t)), BOOTSTRAP_TOKEN: 'false' };
  const server = await started(t, env);
  assert.doesNotMatch(server.stdout() + server.stderr(), /pst_/);
  assert.deepEqual(await listedTokens<{ id: string; name: string; scopes: string }>(env), []);
  const res = await fetch(`${server.url}/plants`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"id":1,"name":"fern"}' });
  assert.equal(res.status, 401);
  await errorOf(res);
});

test('a store that already has a token (made with the CLI before the first start) gets no bootstrap token', async (t) => {
  const env = { DATABASE_URL: await migratedDatabaseUrl(t) };
  const created = await runCli(['token', 'create', '--scopes', 'plants:read', '--name', 'reader'], env);
  assert.equal(created.code, 0, created.stderr);
  const server = await started(t, env);
  assert.doesNotMatch(server.stdout() + server.stderr(), /pst_/);
  assert.deepEqual((await listedTokens<{ id: string; name: string; scopes: string }>(env)).map((r) => r.name), ['reader']);
});
