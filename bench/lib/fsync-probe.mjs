// How long the disk takes to make a 4 KiB write durable (write + fdatasync), the floor under every
// durable commit; measured in the results' directory's file system, right before the run.
import { closeSync, fdatasyncSync, openSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';

export function fsyncProbe(dir, count = 200) {
  const file = join(dir, '.fsync-probe');
  const fd = openSync(file, 'w');
  const page = Buffer.alloc(4096, 1);
  const ms = [];
  try {
    for (let i = 0; i < count; i++) {
      const t = performance.now();
      writeSync(fd, page, 0, page.length, (i % 16) * 4096);
      fdatasyncSync(fd);
      ms.push(performance.now() - t);
    }
  } finally {
    closeSync(fd);
    rmSync(file, { force: true });
  }
  ms.sort((a, b) => a - b);
  return { count, p50_ms: ms[count >> 1], p90_ms: ms[Math.floor(count * 0.9)], p99_ms: ms[Math.floor(count * 0.99)], max_ms: ms[count - 1] };
}
