// Nothing secret reaches the logs: the whole output of `plant-store serve` at LOG_LEVEL=debug, after
// requests that fail in many ways (bad bodies, conflicts, oversized bodies, refused tokens) and webhook
// deliveries that fail (a receiver answering 500, a receiver that is gone), holds no token, no webhook
// signing secret, no signature, and nothing of a request or receiver body.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnServer } from '../helpers/app.js';
import { freePort } from '../helpers/ports.js';
import { freshDatabaseUrl } from '../helpers/test-store.js';
import { eventually } from '../helpers/sleep.js';
import { startReceiver } from '../helpers/receiver.js';
import { createToken } from '../helpers/cli.js';

const BODY_MARK = 'BODYMARK7f3a';
const RECEIVER_MARK = 'RECEIVERMARK91c2';

test('logs hold no token, webhook secret, signature or body, through request errors and webhook failures', async (t) => {
  const databaseUrl = await freshDatabaseUrl(t, 'logs.db');
  const token = await createToken(databaseUrl, 'plants:read,plants:write,webhooks:manage');

  let receiverSecret = '';
  const receiver = await startReceiver(t, () => receiverSecret, () => ({ status: 500, headers: { 'content-type': 'text/plain' }, body: `${RECEIVER_MARK} failure details` }));
  const signatures = () => receiver.requests.map((r) => String(r.headers['webhook-signature'] ?? ''));
  // A port nothing listens on: connection refused.
  const gonePort = await freePort();

  const server = await spawnServer(t, {
    DATABASE_URL: databaseUrl,
    BOOTSTRAP_TOKEN: 'false',
    LOG_LEVEL: 'debug',
    WEBHOOK_ALLOWED_HOSTS: '127.0.0.1',
    BODY_LIMIT_BYTES: '1024',
  });
  const call = (path: string, init: RequestInit & { auth?: string } = {}) =>
    fetch(`${server.url}${path}`, {
      ...init,
      headers: { authorization: init.auth ?? `Bearer ${token}`, 'content-type': 'application/json', ...(init.headers as Record<string, string>) },
    });

  const secrets: string[] = [token];
  for (const port of [receiver.port, gonePort]) {
    const res = await call('/webhooks', { method: 'POST', body: JSON.stringify({ url: `http://127.0.0.1:${port}/hook`, description: 'log test' }) });
    assert.equal(res.status, 201);
    secrets.push(((await res.json()) as { secret: string }).secret);
  }
  receiverSecret = secrets[1]!;

  const statuses: number[] = [];
  const send = async (path: string, init: RequestInit & { auth?: string }) => {
    const res = await call(path, init);
    statuses.push(res.status);
    await res.arrayBuffer();
  };
  await send('/plants', { method: 'POST', body: JSON.stringify({ id: 1, name: `${BODY_MARK} one` }) });
  await send('/plants', { method: 'POST', body: JSON.stringify({ id: 1, name: `${BODY_MARK} conflict` }) });
  await send('/plants', { method: 'POST', body: `{"id": 2, "name": "${BODY_MARK}` });
  await send('/plants', { method: 'POST', body: JSON.stringify({ id: `${BODY_MARK}`, name: 'wrong type' }) });
  await send('/plants', { method: 'POST', body: JSON.stringify({ id: 3, name: BODY_MARK.repeat(200) }) });
  await send('/plants', { method: 'POST', body: JSON.stringify({ id: 4, name: BODY_MARK }), auth: `Bearer ${token}x` });
  await send(`/plants?access_token=${token}`, { method: 'GET' });
  await send('/webhooks', { method: 'POST', body: JSON.stringify({ url: `ftp://${BODY_MARK}.example/` }) });
  assert.deepEqual(statuses, [200, 409, 400, 400, 413, 401, 400, 400]);

  // Wait until both subscriptions have a failed attempt of the newPlant event.
  let attempts: number[] = [];
  await eventually(
    async () => {
      const subs = (await (await call('/webhooks')).json()) as { id: string }[];
      attempts = await Promise.all(
        subs.map(async (s) => ((await (await call(`/webhooks/${s.id}/deliveries`)).json()) as { attempts: unknown[] }[]).flatMap((d) => d.attempts).length),
      );
      return attempts.every((n) => n >= 1);
    },
    () => `webhook attempts did not happen: ${attempts}`,
    20_000,
    100,
  );
  assert.ok(signatures().length >= 1 && signatures()[0]!.startsWith('v1,'), `the receiver saw a signed delivery: ${signatures()[0]}`);

  server.proc.kill('SIGTERM');
  await server.exited;
  const logs = server.stdout() + server.stderr();
  assert.match(logs, /webhook attempt failed/, 'the webhook failures were logged');
  assert.match(logs, /"statusCode":413/, 'the request errors were logged');
  for (const secret of secrets) assert.ok(!logs.includes(secret), `a secret is in the logs: ${secret.slice(0, 8)}…`);
  for (const signature of signatures()) assert.ok(!logs.includes(signature.slice(3)), 'a webhook signature is in the logs');
  assert.ok(!logs.includes(BODY_MARK), 'a request body is in the logs');
  assert.ok(!logs.includes(RECEIVER_MARK), 'a receiver body is in the logs');
});
