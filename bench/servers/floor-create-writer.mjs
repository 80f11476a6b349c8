// The writer thread of the create floor (floor-create.mjs): its own connection to the plant-store file with the
// service's write connection's settings (src/storage/sqlite/connection-setup.ts), and for each batch it is sent
// (flat: id, name, tag or null per create) the statements src/storage/sqlite/sqlite-plant-writes.ts createBatchWriter
// runs for creates, in plantBatch's order (src/storage/plant-writes.ts), in one IMMEDIATE transaction: the
// batch's versions taken from the store-wide counter at once, each first create of an id inserted with its
// folded name (an id taken is read back: a replay or a conflict), each plant created gets its newPlant event row
// (the service's event id and body, from dist/) at the next feed position, and event_log's last position. The
// schema's triggers and indexes run by themselves. Answers, flat: per create its outcome (0 created, 1 replayed,
// 2 conflict) and version.
import { parentPort, workerData } from 'node:worker_threads';
import { createRequire } from 'node:module';
import { foldName } from '../../dist/src/plants/plant-search.js';
import { plantEvent } from '../../dist/src/webhooks/outbox-events.js';

const Database = createRequire(new URL('../../package.json', import.meta.url))('better-sqlite3');
const db = new Database(workerData.file, { timeout: 5_000 });
db.pragma('journal_mode = WAL');
db.pragma('synchronous = FULL');
db.pragma('foreign_keys = ON');

const takeVersions = db.prepare('UPDATE plant_version_counter SET last = last + ? RETURNING last').pluck().safeIntegers(true);
const insertPlant = db.prepare('INSERT INTO plants (id, name, tag, created_at, version, name_folded) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING');
const getPlant = db.prepare('SELECT id, name, tag, version FROM plants WHERE id = ?').safeIntegers(true);
const insertEvent = db.prepare('INSERT INTO webhook_events (id, type, payload, created_at, position, trace_context) VALUES (?, ?, ?, ?, ?, ?)');
const lastPosition = db.prepare('SELECT last_position FROM event_log WHERE id = 1').pluck().safeIntegers(true);
const setLastPosition = db.prepare('UPDATE event_log SET last_position = ? WHERE id = 1');

const CREATED = 0;
const REPLAYED = 1;
const CONFLICT = 2;

const commit = db.transaction((wire) => {
  const n = wire.length / 3;
  const now = Date.now();
  let next = takeVersions.get(n) - BigInt(n) + 1n;
  const out = new Array(2 * n);
  // The plant under each id the batch names, as the batch leaves it.
  const stored = new Map();
  const events = [];
  for (let i = 0, k = 0; i < n; i++, k += 3) {
    const id = wire[k];
    if (stored.has(id)) continue;
    const name = wire[k + 1];
    const tag = wire[k + 2];
    if (insertPlant.run(id, name, tag, now, next, foldName(name)).changes === 1) {
      stored.set(id, { name, tag, version: next });
      out[2 * i] = CREATED;
      out[2 * i + 1] = next;
      events.push(plantEvent('newPlant', tag === null ? { id, name } : { id, name, tag }, next));
      next++;
    } else {
      stored.set(id, undefined);
    }
  }
  for (let i = 0, k = 0; i < n; i++, k += 3) {
    if (out[2 * i] !== undefined) continue;
    const id = wire[k];
    let found = stored.get(id);
    if (found === undefined) {
      const row = getPlant.get(id);
      if (!row) throw new Error(`create of plant ${id} found its id taken and then no plant under it`);
      stored.set(id, (found = { name: row.name, tag: row.tag, version: row.version }));
    }
    const same = found.name === wire[k + 1] && found.tag === wire[k + 2];
    out[2 * i] = same ? REPLAYED : CONFLICT;
    out[2 * i + 1] = same ? found.version : null;
  }
  if (events.length > 0) {
    let position = lastPosition.get();
    for (const e of events) insertEvent.run(e.id, e.type, e.payload, now, ++position, null);
    setLastPosition.run(position);
  }
  return out;
});

parentPort.on('message', (wire) => {
  let reply;
  try {
    reply = commit.immediate(wire);
  } catch (err) {
    reply = { failed: err.message };
  }
  parentPort.postMessage(reply);
});
