// Standard output's log lines are batched (src/observations/logger.ts): none may be lost, reordered or torn, however the
// process ends. Each case runs a child process that logs through the service's own logger.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';

const LOGGER = new URL('../../src/observations/logger.js', import.meta.url).href;

/** Runs `body` in a child with `log` (the service's logger, level info) in scope; resolves with its stdout. */
function runLogging(body: string): Promise<{ code: number | null; lines: Record<string, any>[] }> {
  const script = `import { createLogger } from ${JSON.stringify(LOGGER)};\nconst log = createLogger({ logLevel: 'info' });\n${body}`;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.on('error', reject);
    child.on('close', (code) => {
      try {
        resolve({ code, lines: out.split('\n').filter(Boolean).map((l) => JSON.parse(l)) });
      } catch (err) {
        reject(new Error(`a torn line in ${JSON.stringify(out.slice(0, 500))}: ${(err as Error).message}`));
      }
    });
  });
}

function assertSequence(lines: Record<string, any>[], count: number): void {
  assert.equal(lines.length, count, 'every line arrives');
  lines.forEach((line, i) => {
    assert.equal(line.i, i, 'in the order logged');
    assert.equal(line.msg, 'line');
  });
}

test('lines logged in the same tick as process.exit() are all written', async () => {
  // Under one batch (4 KiB): they are still waiting in the logger when the process exits.
  const r = await runLogging(`for (let i = 0; i < 30; i++) log.info({ i }, 'line');\nprocess.exit(3);`);
  assert.equal(r.code, 3);
  assertSequence(r.lines, 30);
});

test('a burst larger than one batch, then a natural exit: every line, in order', async () => {
  // About 120 bytes a line: 5,000 lines are many 4 KiB batches, some written while others are in flight.
  const r = await runLogging(`for (let i = 0; i < 5000; i++) log.info({ i, pad: 'x'.repeat(i % 64) }, 'line');`);
  assert.equal(r.code, 0);
  assertSequence(r.lines, 5000);
});

test('lines spread over many ticks and a line larger than a batch keep their order', async () => {
  const r = await runLogging(`
let i = 0;
for (let tick = 0; tick < 20; tick++) {
  await new Promise((r) => setImmediate(r));
  for (let k = 0; k < 10; k++, i++) log.info(i === 105 ? { i, big: 'y'.repeat(10_000) } : { i }, 'line');
}`);
  assert.equal(r.code, 0);
  assertSequence(r.lines, 200);
  assert.equal(r.lines[105]!.big.length, 10_000);
});

test('many lines a turn over many turns (a few hundred connections answered per turn): every line, in order', async () => {
  // About 300 lines a turn, more than a hand-over's 64 KiB in some turns, written while earlier writes are in flight.
  const r = await runLogging(`
let i = 0;
for (let turn = 0; turn < 60; turn++) {
  await new Promise((r) => setImmediate(r));
  for (let k = 0; k < 300; k++, i++) log.info({ i, path: '/plants/' + (1000000 + i), pad: 'z'.repeat((i * 7) % 300) }, 'line');
}`);
  assert.equal(r.code, 0);
  assertSequence(r.lines, 18_000);
});
