// A stop signal to the whole process group of `plant-store serve` with WORKERS=2 (Ctrl-C in a terminal, systemd's
// stop), with requests in flight: the output, read to its end, holds every process's last lines and the access
// line of every request that was answered (docs/operations.md, Logs).
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawnServer } from '../helpers/app.js';
import { databaseWithToken, portOf } from '../helpers/cli.js';
import { fresh } from '../helpers/raw-request.js';
import { eventually, sleep, within } from '../helpers/sleep.js';

interface LogLine {
  msg: string;
  role?: string;
  worker?: number;
  reqId?: string;
  statusCode?: number;
}

interface Stop {
  /** What the output lacks, said in words; empty when it holds everything. */
  missing: string[];
  answered: number;
  /** Answers the drain gave (503), a sign that requests were in flight at the signal. */
  refused: number;
}

let nextId = 1;

/** Starts a server, loads it with three clients, signals its group, and checks its whole output. */
async function stopUnderLoad(t: TestContext, db: { databaseUrl: string; token: string }, signal: NodeJS.Signals, round: number): Promise<Stop> {
  const server = await spawnServer(t, { DATABASE_URL: db.databaseUrl, BOOTSTRAP_TOKEN: 'false', WORKERS: '2' }, { group: true });
  // 'close': every process of the group has exited and the pipe they all wrote to is read to its end.
  const closed = new Promise<number | null>((resolve) => server.proc.once('close', (code) => resolve(code)));
  await eventually(() => server.stdout().includes('plant-store is listening'), "the primary's start line (every worker listening)", 20_000, 20);
  const port = portOf(server.url);

  // Light traffic: each request on a connection of its own, and the clients pause between requests, so that at
  // the signal a worker has a request or two in flight, or none and nothing to drain.
  const answered = new Map<string, number>();
  let stopped = false;
  const client = async (c: number) => {
    let id = 0;
    for (let n = 0; !stopped; n++) {
      const reqId = `r${round}c${c}n${n}`;
      const write = n % 2 === 0;
      if (write) id = nextId++;
      try {
        const res = await fresh(port, write ? '/plants' : `/plants/${id}`, db.token, {
          method: write ? 'POST' : 'GET',
          headers: { 'x-request-id': reqId },
          ...(write ? { body: JSON.stringify({ id, name: 'group stop' }) } : {}),
        });
        answered.set(reqId, res.status);
      } catch {
        // Refused or closed: the server is going.
        return;
      }
      // Real time: the pause between requests that keeps the traffic light.
      await sleep(10);
    }
  };
  const clients = [0, 1, 2].map(client);
  await eventually(() => answered.size >= 6, 'six answers before the signal', 10_000);
  process.kill(-server.proc.pid!, signal);
  const code = await within(closed, 15_000, 'still running 15 s after the signal');
  stopped = true;
  await Promise.all(clients);

  const lines = server
    .stdout()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as LogLine);
  const missing: string[] = [];
  if (code !== 0) missing.push(`exit 0 (got ${code})`);
  if (server.stderr() !== '') missing.push(`nothing on stderr (got ${server.stderr()})`);
  const said = (who: (l: LogLine) => boolean, msg: RegExp) => lines.some((l) => who(l) && msg.test(l.msg));
  const workers = lines.filter((l) => l.msg === 'worker started').map((l) => l.worker!);
  const processes: [string, (l: LogLine) => boolean][] = [['primary', (l) => l.role === 'primary'], ...workers.map((w): [string, (l: LogLine) => boolean] => [`worker ${w}`, (l) => l.role === undefined && l.worker === w])];
  for (const [name, who] of processes) {
    if (!said(who, /^shutting down: (every worker finishes|finishing in-flight)/)) missing.push(`${name}: shutting down`);
    if (!said(who, /^stopped$/)) missing.push(`${name}: stopped`);
  }
  const logged = new Map(lines.filter((l) => l.msg === 'request completed').map((l) => [l.reqId!, l.statusCode]));
  const unlogged = [...answered].filter(([reqId, status]) => logged.get(reqId) !== status).map(([reqId, status]) => `${reqId} ${status}`);
  if (unlogged.length > 0) missing.push(`access lines of ${unlogged.length} of ${answered.size} answers (${unlogged.join(', ')})`);
  return { missing, answered: answered.size, refused: [...answered.values()].filter((s) => s === 503).length };
}

function check(t: TestContext, stops: Stop[]) {
  const answered = stops.reduce((sum, s) => sum + s.answered, 0);
  const refused = stops.reduce((sum, s) => sum + s.refused, 0);
  t.diagnostic(`${stops.length} stops: ${answered} answers, ${refused} of them the drain's 503`);
  assert.deepEqual(
    stops.flatMap((s, round) => s.missing.map((m) => `stop ${round}: ${m}`)),
    [],
  );
}

test('SIGINT to the process group with WORKERS=2 under light load, 20 times: every process says it is shutting down and stopped, and every answer has its access line', async (t) => {
  const db = await databaseWithToken(t);
  const stops: Stop[] = [];
  for (let round = 0; round < 20; round++) stops.push(await stopUnderLoad(t, db, 'SIGINT', round));
  check(t, stops);
});

test('SIGTERM to the process group with WORKERS=2 under light load: every last line and every access line', async (t) => {
  const db = await databaseWithToken(t);
  check(t, [await stopUnderLoad(t, db, 'SIGTERM', 0)]);
});

test('SIGINT to the process group with WORKERS=2 while a worker is still starting: the server stops, exit 0, no error line', async (t) => {
  const db = await databaseWithToken(t);
  // spawnServer returns at the first worker's listening line, before the primary's start line: the other worker
  // is starting or has just listened.
  const server = await spawnServer(t, { DATABASE_URL: db.databaseUrl, BOOTSTRAP_TOKEN: 'false', WORKERS: '2' }, { group: true });
  const closed = new Promise<number | null>((resolve) => server.proc.once('close', (code) => resolve(code)));
  process.kill(-server.proc.pid!, 'SIGINT');
  assert.equal(await closed, 0, server.stdout());
  assert.equal(server.stderr(), '');
  const lines = server
    .stdout()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as LogLine & { level: number });
  assert.deepEqual(lines.filter((l) => l.level >= 50), []);
  assert.ok(lines.some((l) => l.role === 'primary' && l.msg === 'stopped'), server.stdout());
});
