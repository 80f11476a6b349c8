// node:test reporter for scripts/test.mjs: node's own spec reporter with the store under test
// (PLANT_STORE_TEST_STORE) in front of every test's name, so each line a developer reads says which engine it
// ran on. Diagnostics, and so the closing summary lines (ℹ tests, ℹ pass, ℹ fail, ...), pass through unchanged.
import { Readable } from 'node:stream';
import { spec } from 'node:test/reporters';

const tag = `[${process.env.PLANT_STORE_TEST_STORE || 'sqlite'}] `;

async function* named(source) {
  for await (const event of source) {
    const name = event.data?.name;
    yield typeof name === 'string' && !name.startsWith(tag) ? { ...event, data: { ...event.data, name: tag + name } } : event;
  }
}

export default async function* engineReporter(source) {
  yield* Readable.from(named(source)).pipe(new spec());
}
