// Tokens never reach the logs: after requests with valid, read-only, unknown, revoked and throttled tokens,
// the whole output of `plant-store serve` holds no secret, apart from the one-time bootstrap banner.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { runCli, spawnServer, tempDir, freshDatabaseUrl } from '../helpers/app.js';
import { parseRawResponse, rawHttp } from '../helpers/raw-request.js';
import { eventually } from '../helpers/sleep.js';

const TOKEN_SHAPE = /pst_[A-Za-z0-9_-]{43}/;

async function cliToken(env: Record<string, string>, scopes: string, name: string): Promise<{ id: string; secret: string }> {
  const res = await runCli(['token', 'create', '--scopes', scopes, '--name', name], env);
  assert.equal(res.code, 0, res.stderr);
  return { id: /tok_[A-Za-z0-9_-]+/.exec(res.stdout)![0], secret: res.stdout.trimEnd().split('\n').at(-1)! };
}

/** Removes the bootstrap banner: from its first line to its "Manage tokens" line. */
function withoutBanner(stdout: string): string {
  const start = stdout.indexOf('No API token existed');
  if (start < 0) return stdout;
  const end = stdout.indexOf('\n', stdout.indexOf('Manage tokens with', start));
  assert.ok(end > start, 'the banner has no end line');
  return stdout.slice(0, stdout.lastIndexOf('\n', start) + 1) + stdout.slice(end + 1);
}

test('no token appears in the logs of a server that answered requests made with tokens', async (t) => {
  const dir = tempDir(t);
  const env = { DATABASE_URL: (await freshDatabaseUrl(t)), LOG_LEVEL: 'trace', AUTH_FAILURES_PER_MINUTE: '4', TOKEN_CACHE_TTL_MS: '0' };
  const server = await spawnServer(t, env);
  // The banner follows the listening line once the first token is stored.
  const [bootstrap] = await eventually(() => TOKEN_SHAPE.exec(server.stdout()), 'no bootstrap token printed', 5_000, 50);
  const [reader, revoked] = await Promise.all([cliToken(env, 'plants:read', 'reader'), cliToken(env, 'plants:write', 'revoked')]);
  assert.equal((await runCli(['token', 'revoke', revoked.id], env)).code, 0);
  const unknown = 'pst_' + 'L'.repeat(43);
  const malformed = 'pst_thisIsNotAWellFormedTokenButStillSecret';

  const post = (authorization: string, body: string, contentType = 'application/json') =>
    fetch(`${server.url}/plants`, { method: 'POST', headers: { authorization, 'content-type': contentType, 'x-request-id': 'log-check' }, body });
  const statuses: number[] = [];
  for (const [auth, body, type] of [
    [`Bearer ${bootstrap}`, '{"id":1,"name":"fern"}'],
    [`Bearer ${bootstrap}`, '{"id":1,"name":"other"}'],
    [`Bearer ${bootstrap}`, '{"id":'],
    [`Bearer ${bootstrap}`, 'x', 'text/plain'],
    [`bearer   ${bootstrap}`, '{"id":2,"name":"fern"}'],
    [`Bearer ${reader.secret}`, '{"id":3,"name":"fern"}'],
    [`Basic ${Buffer.from(`u:${bootstrap}`).toString('base64')}`, '{}'],
    [`Token ${bootstrap}`, '{}'],
    [`Bearer ${revoked.secret}`, '{"id":4,"name":"fern"}'],
    [`Bearer ${unknown}`, '{"id":5,"name":"fern"}'],
    [`Bearer ${malformed}`, '{"id":6,"name":"fern"}'],
    [`Bearer ${unknown}`, '{"id":7,"name":"fern"}'],
    [`Bearer ${unknown}`, '{"id":8,"name":"fern"}'],
    [`Bearer ${bootstrap}`, '{"id":9,"name":"fern"}'],
  ] as Array<[string, string, string?]>) {
    const res = await post(auth, body, type);
    await res.arrayBuffer();
    statuses.push(res.status);
  }
  // Every kind of answer happened: created, conflict, bad body, media type, forbidden, challenges, throttled.
  assert.deepEqual(statuses, [200, 409, 400, 415, 200, 403, 401, 401, 401, 401, 401, 401, 429, 200]);
  const twoHeaders = parseRawResponse(
    await rawHttp(
      Number(new URL(server.url).port),
      `POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${reader.secret}\r\nAuthorization: Bearer ${bootstrap}\r\n` +
        `Content-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}`,
    ),
  );
  assert.equal(twoHeaders.status, 400);

  server.proc.kill('SIGTERM');
  assert.equal(await server.exited, 0);
  const logs = withoutBanner(server.stdout()) + server.stderr();
  // The logs did record the requests, so the absence below means something.
  assert.ok((logs.match(/"request completed"/g) ?? []).length >= statuses.length + 1, logs);
  assert.ok(logs.includes('log-check'));
  for (const secret of [bootstrap, reader.secret, revoked.secret, unknown, malformed]) {
    assert.equal(logs.includes(secret), false, `a token is in the logs:\n${logs}`);
    assert.equal(logs.includes(secret.slice(4, 30)), false, `part of a token is in the logs:\n${logs}`);
  }
  assert.doesNotMatch(logs, /pst_/);
  // Every line outside the banner is a JSON log line.
  for (const line of logs.split('\n').filter(Boolean)) assert.doesNotThrow(() => JSON.parse(line), line);
});
