// Loaded into every test process (scripts/test.mjs passes `--import ./dist/test/setup/engine-only.js`, and
// test/helpers/test-store.ts imports it): a file that scripts/engine-only.mjs declares for one store, run on
// another (PLANT_STORE_TEST_STORE), fails at once with the declared reason instead of running or skipping.
import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const { wrongStore } = (await import(new URL('../../../scripts/engine-only.mjs', import.meta.url).href)) as {
  wrongStore(file: string, store: string): string | undefined;
};

const entry = process.argv[1];
if (entry) {
  const why = wrongStore(relative(ROOT, entry).split('\\').join('/'), process.env.PLANT_STORE_TEST_STORE || 'sqlite');
  if (why) throw new Error(`${why}: run it with \`npm test -- ${relative(ROOT, entry)}\`, which picks its store`);
}
