// Tokens created or revoked outside the running server (the CLI, another instance) take effect within 5 s,
// without a restart, even for a token the server has just verified and cached.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { createTokenService } from '../../src/auth/token-service.js';
import { openStore } from '../../src/storage/open-store.js';
import { runCli, spawnServer, startApp, tempDir, freshDatabaseUrl } from '../helpers/app.js';
import { testClock } from '../helpers/clock.js';
import { postWith } from '../helpers/requests.js';
import { sleep } from '../helpers/sleep.js';

const LIMIT_MS = 5_000;
let nextId = 1;

/** How time passes between polls: really for a server in another process, by moving the clock in this one. */
interface Time {
  now(): number;
  pass(ms: number): Promise<void>;
}
const realTime: Time = { now: Date.now, pass: sleep };

/** Polls until a POST with `token` answers `status`; returns how long that took. */
async function untilStatus(url: string, token: string, status: number, time: Time = realTime): Promise<number> {
  const since = time.now();
  let last = 0;
  while (time.now() - since < LIMIT_MS + 1_000) {
    const res = await postWith(url, token, nextId++);
    await res.arrayBuffer();
    last = res.status;
    if (last === status) return time.now() - since;
    await time.pass(100);
  }
  assert.fail(`still ${last} instead of ${status} after ${LIMIT_MS + 1_000} ms`);
}

test('the CLI creates and revokes tokens for a running `plant-store serve`, effective within 5 s', async (t) => {
  const dir = tempDir(t);
  const env = { DATABASE_URL: (await freshDatabaseUrl(t)), AUTH_FAILURES_PER_MINUTE: '1000', BOOTSTRAP_TOKEN: 'false' };
  const server = await spawnServer(t, env);

  const created = await runCli(['token', 'create', '--scopes', 'plants:write', '--name', 'live'], env);
  assert.equal(created.code, 0, created.stderr);
  const secret = created.stdout.trimEnd().split('\n').at(-1)!;
  const id = /tok_[A-Za-z0-9_-]+/.exec(created.stdout)![0];
  const createdAfter = await untilStatus(server.url, secret, 200);
  assert.ok(createdAfter <= LIMIT_MS, `a new token took ${createdAfter} ms to work`);

  // The token is now verified and cached by the server; revoke it from another process.
  assert.equal((await postWith(server.url, secret, nextId++)).status, 200);
  const revoked = await runCli(['token', 'revoke', id], env);
  assert.equal(revoked.code, 0, revoked.stderr);
  const revokedAfter = await untilStatus(server.url, secret, 401);
  assert.ok(revokedAfter <= LIMIT_MS, `a revoked token kept working for ${revokedAfter} ms`);

  // And it stays revoked; the server was never restarted.
  const res = await postWith(server.url, secret, nextId++);
  assert.equal(res.status, 401);
  assert.match(res.headers.get('www-authenticate') ?? '', /error="invalid_token"/);
  assert.equal(server.proc.exitCode, null);
});

test('a token revoked by another instance on the same database stops working within 5 s', async (t) => {
  const clock = testClock();
  const time: Time = { now: clock.now, pass: async (ms) => clock.advance(ms) };
  const s = await startApp(t, { config: { authFailuresPerMinute: 1000 }, clock });
  const { store: other } = await openStore(s.databaseUrl);
  t.after(() => other.close());
  const otherTokens = createTokenService(other);

  // Created by the other instance: usable here without delay beyond the limit.
  const { token, secret } = await otherTokens.create({ name: 'elsewhere', scopes: ['plants:write'] });
  assert.ok((await untilStatus(s.url, secret, 200, time)) <= LIMIT_MS);

  // Cached here, then revoked there.
  assert.equal((await postWith(s.url, secret, nextId++)).status, 200);
  assert.equal(await otherTokens.revoke(token.id), true);
  const after = await untilStatus(s.url, secret, 401, time);
  assert.ok(after <= LIMIT_MS, `kept working for ${after} ms`);
  // The server's own test tokens are untouched.
  assert.equal((await postWith(s.url, s.token.write, nextId++)).status, 200);
});
