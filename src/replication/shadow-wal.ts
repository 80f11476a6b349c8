// Where Litestream stands against the store's WAL, read from its files and its log: how far a replica's segment
// reaches, and where its shadow WAL ends once it holds every frame of the WAL. The supervisor's lag is built on these.
import { closeSync, openSync, readdirSync, readFileSync, readSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

/** A segment's end as `generation/index:offset`, from the position it started at and its size. */
export function endOf(position: unknown, size: unknown): string | undefined {
  const m = typeof position === 'string' ? /^([0-9a-f]+)\/([0-9a-f]+):(\d+)$/.exec(position) : null;
  if (!m || typeof size !== 'number') return undefined;
  return `${m[1]}/${m[2]}:${Number(m[3]) + Number(size)}`;
}

const WAL_HEADER = 32;
const FRAME_HEADER = 24;

/**
 * Where Litestream's shadow WAL of `database` ends (`generation/index:offset`), when the WAL holds no frame it
 * lacks; undefined while it does (or cannot be read). Litestream v0.3 keeps it in `.<name>-litestream/` beside
 * the store: `generation` names the current one, `generations/<g>/wal/<index>.wal` are copies of the WAL, each
 * from its header on. A frame belongs to the WAL's current run when its salts are the header's.
 */
export function shadowEnd(database: string): string | undefined {
  try {
    const meta = join(dirname(database), `.${basename(database)}-litestream`);
    const generation = readFileSync(join(meta, 'generation'), 'utf8').trim();
    const walDir = join(meta, 'generations', generation, 'wal');
    const last = readdirSync(walDir)
      .filter((f) => /^[0-9a-f]{8}\.wal$/.test(f))
      .sort()
      .at(-1);
    if (!last) return undefined;
    const shadow = readHead(join(walDir, last), 0, WAL_HEADER);
    const size = statSync(join(walDir, last)).size;
    const wal = readHead(`${database}-wal`, 0, WAL_HEADER);
    // An empty WAL (truncated by a checkpoint) holds nothing the shadow WAL lacks.
    if (wal.length === WAL_HEADER) {
      if (shadow.length < WAL_HEADER || !wal.subarray(16, 24).equals(shadow.subarray(16, 24))) return undefined;
      const next = readHead(`${database}-wal`, size, FRAME_HEADER);
      if (next.length === FRAME_HEADER && next.subarray(8, 16).equals(wal.subarray(16, 24))) return undefined;
    }
    return `${generation}/${last.slice(0, 8)}:${size}`;
  } catch {
    return undefined;
  }
}

function readHead(file: string, position: number, length: number): Buffer {
  const fd = openSync(file, 'r');
  try {
    const buf = Buffer.alloc(length);
    return buf.subarray(0, readSync(fd, buf, 0, length, position));
  } catch {
    return Buffer.alloc(0);
  } finally {
    closeSync(fd);
  }
}
