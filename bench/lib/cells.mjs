// What the write cells need around each wrk run (writes.mjs, pair.mjs): the plants a DELETE run deletes and
// the current ETags a PATCH with If-Match starts from.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, SEED_BASE } from './servers.mjs';

/** The wrk script of each write endpoint (bench/wrk/<name>.lua). */
export const WRITE_ENDPOINTS = ['post', 'put', 'patch', 'patch-if-match', 'delete'];

/** Adds plants `first` .. `first + count - 1` (tag "seed") with the service's own `import` command, events and all. */
export function importPlants(server, first, count, { root = ROOT, node = process.execPath, name = 'Seed' } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'bench-import-'));
  try {
    const file = join(dir, 'plants.jsonl');
    const lines = new Array(count);
    for (let i = 0; i < count; i++) lines[i] = `{"id":${first + i},"name":"${name} ${first + i}","tag":"seed"}`;
    writeFileSync(file, lines.join('\n') + '\n');
    const out = execFileSync(node, [join(root, 'bin/plant-store.js'), 'import', file], {
      env: { ...process.env, DATABASE_URL: server.databaseUrl }, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'],
    });
    if (!out.includes(`imported: ${count}`)) throw new Error(`import of ${count} plants: ${out}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The plants DELETE runs delete, from id 100,000,000 up (below the POST ids, above the seeded ones): each run
 * takes ids after those the run before may have sent, imported beforehand in the number the run may need.
 */
export class DeletePool {
  constructor(server, opts = {}) {
    this.server = server;
    this.opts = opts;
    this.next = 100_000_000;
    this.end = this.next;
    this.rate = undefined;
  }

  /** Imports enough plants for a run of `seconds` at `conns` (1.5x the last run's rate, or a guess above this VM's), and returns the script's env. */
  prepare(conns, seconds) {
    const rate = this.rate ?? (conns === 1 ? 5_000 : 30_000);
    const need = Math.ceil(1.5 * rate * seconds) + conns + 1;
    if (this.end - this.next < need) {
      importPlants(this.server, this.end, this.next + need - this.end, { ...this.opts, name: 'Delete' });
      this.end = this.next + need;
    }
    return { BENCH_DELETE_FIRST: String(this.next), BENCH_DELETE_PER_THREAD: String(need) };
  }

  /** After the run: wrk counts answered requests; up to one more per connection may have gone out, and one more id went to wrk's check of the script before the run. */
  used(r, conns) {
    this.next += r.requests + conns + 1;
    this.rate = r.requests / r.busy_s;
  }
}

/**
 * "id:etag,..." of the seeded plants SEED_BASE + 1 .. SEED_BASE + count, once two reads 50 ms apart agree: the
 * writes a wrk run left in flight when it stopped still commit after it exits, and a tag read before one of
 * them would fail every If-Match of its plant.
 */
export async function currentEtags(port, token, count) {
  for (let last = await readEtags(port, token, count); ;) {
    await new Promise((r) => setTimeout(r, 50));
    const now = await readEtags(port, token, count);
    if (now === last) return now;
    last = now;
  }
}

async function readEtags(port, token, count) {
  const tags = await Promise.all(Array.from({ length: count }, async (_, i) => {
    const id = SEED_BASE + 1 + i;
    const res = await fetch(`http://127.0.0.1:${port}/plants/${id}`, { headers: { authorization: `Bearer ${token}` } });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`GET /plants/${id}: ${res.status}`);
    return `${id}:${res.headers.get('etag')}`;
  }));
  return tags.join(',');
}

/**
 * The env of one wrk run of a write endpoint beyond the token and the seeded range: the ETags of `conns` + 1 plants
 * (patch-if-match) or the plants to delete (delete; pass the server's DeletePool, and call its used() after).
 */
export async function writeRunEnv(endpoint, server, conns, seconds, pool) {
  if (endpoint === 'patch-if-match') return { BENCH_ETAGS: await currentEtags(server.port, server.token, conns + 1) };
  if (endpoint === 'delete') return pool.prepare(conns, seconds);
  return {};
}
