// With several worker processes (WORKERS=2), the failure throttle and the per-token rate limit hold for the
// whole service, not per worker: they count in the primary. The primary hands new connections to the workers
// in turn, and the access log shows that both workers answered.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { spawnServer } from '../helpers/app.js';
import { eventually } from '../helpers/sleep.js';
import { databaseWithToken, portOf } from '../helpers/cli.js';

const FAILURES = 20;
/** Over two workers each may run 2 ahead of the primary (slackFor), and the bound is 2 x 2 x 2 = 8 (1%). */
const PER_TOKEN = 800;
const BOUND = 8;
const UNKNOWN = 'pst_' + 'Z'.repeat(43);

/** One GET, on a connection of its own unless `agent` keeps some open. */
function get(port: number, path: string, token: string, agent: http.Agent | false = false): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, agent, headers: { authorization: `Bearer ${token}` } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode!));
    });
    req.on('error', reject);
    req.end();
  });
}

/** `count` requests, `parallel` at a time; the statuses in the order answered. */
async function spread(port: number, token: string, count: number, parallel: number, agent: http.Agent | false = false): Promise<number[]> {
  const statuses: number[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (next < count) {
        next++;
        statuses.push(await get(port, '/plants?limit=1', token, agent));
      }
    }),
  );
  return statuses;
}

/** The workers that answered `status` (the "worker" of their access log lines). */
function workersAnswering(stdout: string, status: number): Set<number> {
  const workers = new Set<number>();
  for (const line of stdout.split('\n')) {
    if (!line.includes('"request completed"')) continue;
    const entry = JSON.parse(line) as { worker?: number; statusCode?: number };
    if (entry.statusCode === status && entry.worker !== undefined) workers.add(entry.worker);
  }
  return workers;
}

test('over two workers, AUTH_FAILURES_PER_MINUTE and RATE_LIMIT_PER_TOKEN hold for the whole service', async (t) => {
  const { databaseUrl, token } = await databaseWithToken(t);
  const server = await spawnServer(t, {
    DATABASE_URL: databaseUrl, BOOTSTRAP_TOKEN: 'false', WORKERS: '2',
    AUTH_FAILURES_PER_MINUTE: String(FAILURES), RATE_LIMIT_PER_TOKEN: String(PER_TOKEN),
  });
  await eventually(() => server.stdout().includes('plant-store is listening'), 'the primary announcing the server', 20_000);
  const port = portOf(server.url);

  // 60 guesses, 4 at a time: exactly the limit get 401, every other one 429, whichever worker answers.
  const guesses = await spread(port, UNKNOWN, 60, 4);
  const unauthorized = guesses.filter((s) => s === 401).length;
  assert.equal(unauthorized, FAILURES, `401s: ${unauthorized}`);
  assert.equal(guesses.filter((s) => s === 429).length, 60 - FAILURES, `statuses: ${guesses.join(' ')}`);
  await eventually(() => workersAnswering(server.stdout(), 401).size === 2 && workersAnswering(server.stdout(), 429).size === 2, 'both workers answering 401 and 429');

  // A valid token is still served (the throttle refuses only failures), up to its own limit: the whole
  // service admits at least RATE_LIMIT_PER_TOKEN and at most BOUND more. 16 keep-alive connections, which
  // the primary handed to the workers in turn, so that both admit at full speed and report in batches.
  const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
  t.after(() => agent.destroy());
  const total = PER_TOKEN + 100;
  const statuses = await spread(port, token, total, 16, agent);
  const ok = statuses.filter((s) => s === 200).length;
  t.diagnostic(`200s: ${ok} of ${total} (RATE_LIMIT_PER_TOKEN=${PER_TOKEN})`);
  assert.ok(ok >= PER_TOKEN && ok <= PER_TOKEN + BOUND, `200s: ${ok}`);
  assert.equal(ok + statuses.filter((s) => s === 429).length, total);
  await eventually(() => workersAnswering(server.stdout(), 200).size === 2, 'both workers answering 200');
});
