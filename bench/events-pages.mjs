// Memory of the events feed under concurrent large pages (issue 26): the server's RSS while CLIENTS clients at
// once read GET /events?limit=1000 over events of the largest size a plant allows (name and tag of 256 code
// points that JSON writes as six bytes each, about 3.2 kB an event), each following Link to the end of the feed.
// A measurement, not a test. Usage, after `npm run build` (server on core 0, clients on core 1):
//   ../node_modules/.bin/node events-pages.mjs
// Knobs: BENCH_EVENTS (events in the feed, default 3000), BENCH_CLIENTS (20), BENCH_ROUNDS (5), BENCH_PAGE_BYTES
// (the server's EVENTS_PAGE_BYTES; unset: its default, 256 KiB), BENCH_STORE (sqlite, the default, or postgres: a
// throwaway server on the load core, bench/lib/pg.mjs).
import { KINDS, LOAD_CORE, freePort, rssMb } from './lib/servers.mjs';
import { startPostgres } from './lib/pg.mjs';
import { execFileSync } from 'node:child_process';

const EVENTS = Number(process.env.BENCH_EVENTS ?? 3000);
const CLIENTS = Number(process.env.BENCH_CLIENTS ?? 20);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const WIDEST = '\u0001'.repeat(256);

// The clients run on the load core, away from the server's.
execFileSync('taskset', ['-pc', LOAD_CORE, String(process.pid)], { stdio: 'ignore' });
const port = await freePort();
const env = { LOG_LEVEL: 'warn', ...(process.env.BENCH_PAGE_BYTES && { EVENTS_PAGE_BYTES: process.env.BENCH_PAGE_BYTES }) };
const postgres = process.env.BENCH_STORE === 'postgres' ? await startPostgres() : undefined;
const server = await KINDS.find((k) => k.name === 'plant-store').start(port, { env, ...(postgres && { databaseUrl: postgres.url }) });
const base = `http://127.0.0.1:${port}`;
const auth = { authorization: `Bearer ${server.token}` };
try {
  for (let i = 0; i < EVENTS; i += 50) {
    await Promise.all(Array.from({ length: Math.min(50, EVENTS - i) }, async (_, k) => {
      const res = await fetch(`${base}/plants`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ id: i + k + 1, name: WIDEST, tag: WIDEST }) });
      if (res.status !== 200) throw new Error(`seeding: POST answered ${res.status} ${await res.text()}`);
    }));
  }
  const idle = rssMb(server.pid);

  /** One client: the whole feed, 1000 at most a page, following Link. */
  async function follow() {
    let path = '/events?limit=1000';
    let events = 0;
    let pages = 0;
    let largest = 0;
    while (path) {
      const res = await fetch(base + path, { headers: auth });
      const body = await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`GET ${path} answered ${res.status}`);
      events += JSON.parse(Buffer.from(body).toString()).length;
      pages++;
      largest = Math.max(largest, body.byteLength);
      path = /^<([^>]+)>; rel="next"$/.exec(res.headers.get('link') ?? '')?.[1];
    }
    return { events, pages, largest };
  }

  let peak = idle;
  const sampler = setInterval(() => (peak = Math.max(peak, rssMb(server.pid))), 10);
  const started = performance.now();
  let seen;
  for (let r = 0; r < ROUNDS; r++) seen = await Promise.all(Array.from({ length: CLIENTS }, follow));
  const seconds = (performance.now() - started) / 1000;
  clearInterval(sampler);
  if (seen.some((s) => s.events !== EVENTS)) throw new Error(`a client saw ${seen.map((s) => s.events).join(', ')} events, not ${EVENTS}`);
  const { pages, largest } = seen[0];
  console.log(
    `${postgres ? 'PostgreSQL' : 'SQLite'}, ${EVENTS} events of the largest size, ${CLIENTS} clients x ${ROUNDS} rounds, EVENTS_PAGE_BYTES=${env.EVENTS_PAGE_BYTES ?? 'default'}: ` +
      `${pages} pages a client (largest ${(largest / 1024).toFixed(0)} KiB), ${seconds.toFixed(1)} s; ` +
      `server RSS idle ${idle.toFixed(0)} MB, peak ${peak.toFixed(0)} MB`,
  );
} finally {
  await server.stop();
  await postgres?.stop();
}
