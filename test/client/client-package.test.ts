// The client as a client developer gets it: packages/client packed with npm pack, the tarball installed into
// an empty folder (nothing of the service comes with it), then used against a real service from a Node.js
// ESM script, type-checked from a TypeScript file, and loaded into Debian's Chromium. int64 ids stay exact
// bigints everywhere.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { startApp, tempDir } from '../helpers/app.js';
import { launchChromium } from '../helpers/chromium.js';
import { storedPlant } from '../helpers/stored-plant.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const ABOVE_2_53 = 9007199254740993n; // JSON.parse reads it as 9007199254740992

const CONSUMER_SCRIPT = `
import { createPlantStoreClient, nextPlantsPage } from '@plant-store/client';

const [baseUrl, token] = process.argv.slice(2);
const client = createPlantStoreClient({ baseUrl, token });
const id = ${ABOVE_2_53}n;
const created = await client.POST('/plants', { body: { id, name: 'fern', tag: 'packaged' } });
await client.POST('/plants', { body: { id: id + 1n, name: 'moss', tag: 'packaged' } });
const read = await client.GET('/plants/{id}', { params: { path: { id } } });
const first = await client.GET('/plants', { params: { query: { limit: 1, tag: 'packaged' } } });
const next = nextPlantsPage(first.response);
const second = await client.GET('/plants', { params: { query: next } });
// A bigint prints as "<digits>n", so the test sees both its value and its type.
const show = (v) => JSON.stringify(v, (_key, x) => (typeof x === 'bigint' ? x + 'n' : x));
console.log(show({ created: created.response.status, read: read.data, first: first.data, next, second: second.data, last: nextPlantsPage(second.response) ?? null }));
`;

// Compiles only if the installed types say what the document says; each @ts-expect-error must be an error.
const CONSUMER_TYPES = `
import { createPlantStoreClient, listAllPlants, type NewPlant, type PlantStoreClient } from '@plant-store/client';

const client: PlantStoreClient = createPlantStoreClient({ baseUrl: 'http://127.0.0.1:8080', token: 'pst_x' });
const plant: NewPlant = { id: ${ABOVE_2_53}n, name: 'fern' };
// @ts-expect-error int64 ids are bigints, never numbers
const rounded: NewPlant = { id: 9007199254740992, name: 'fern' };
// @ts-expect-error a path the document does not have
const unknown = client.GET('/plantz');

export async function readId(): Promise<bigint | undefined> {
  const { data } = await client.GET('/plants/{id}', { params: { path: { id: plant.id } } });
  return data?.id;
}
export async function names(): Promise<string[]> {
  const all: string[] = [];
  for await (const p of listAllPlants(client, { limit: 100, after: plant.id })) all.push(p.name);
  return all;
}
export { rounded, unknown };
`;

// Asynchronous: the service under test answers from this process meanwhile.
async function run(cmd: string, args: string[], cwd: string): Promise<string> {
  return (await promisify(execFile)(cmd, args, { cwd, encoding: 'utf8', timeout: 90_000 })).stdout;
}

/** The module a package's "exports" hand an ESM importer: what a bundler or import map points at. */
function esmEntry(packageDir: string): string {
  const pkg = JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8')) as { exports: { '.': { import?: string; default: string } } };
  const entry = pkg.exports['.'];
  return (entry.import ?? entry.default).replace(/^\.\//, '');
}

test('the packed client installs alone and works from Node.js, TypeScript and Chromium with exact bigint ids', { timeout: 180_000 }, async (t) => {
  const dir = tempDir(t);
  // npm test has built packages/client/dist just now; rebuilding it here (prepack) would rewrite files other
  // test files are importing at the same time.
  const [packed] = JSON.parse(await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', dir], join(ROOT, 'packages/client'))) as [{ filename: string }];
  const consumer = join(dir, 'consumer');
  mkdirSync(consumer);
  writeFileSync(join(consumer, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
  await run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', join(dir, packed.filename)], consumer);

  // Nothing of the service came along: no Fastify, no SQLite driver, no pg. eventsource-parser reads streamEvents' stream.
  const installed = readdirSync(join(consumer, 'node_modules'), { withFileTypes: true })
    .filter((e) => e.isDirectory() && !e.name.startsWith('.'))
    .flatMap((e) => (e.name.startsWith('@') ? readdirSync(join(consumer, 'node_modules', e.name)).map((n) => `${e.name}/${n}`) : [e.name]))
    .sort();
  assert.deepEqual(installed, ['@plant-store/client', 'eventsource-parser', 'openapi-fetch', 'openapi-typescript-helpers']);

  const s = await startApp(t);

  await t.test('Node.js ESM: create above 2^53, read it back exactly, follow a list page', async () => {
    writeFileSync(join(consumer, 'check.mjs'), CONSUMER_SCRIPT);
    const out = JSON.parse(await run(process.execPath, ['check.mjs', s.url, s.token.all], consumer)) as unknown;
    assert.deepEqual(out, {
      created: 200,
      read: { id: `${ABOVE_2_53}n`, name: 'fern', tag: 'packaged' },
      // A list item's version: the first and second writes of a fresh store (versions start at 2).
      first: [{ id: `${ABOVE_2_53}n`, name: 'fern', tag: 'packaged', version: '2n' }],
      next: { limit: 1, after: `${ABOVE_2_53}n`, tag: 'packaged' },
      second: [{ id: `${ABOVE_2_53 + 1n}n`, name: 'moss', tag: 'packaged', version: '3n' }],
      last: null,
    });
  });
  assert.deepEqual(await storedPlant(s.store, ABOVE_2_53), { id: ABOVE_2_53, name: 'fern', tag: 'packaged' });

  await t.test('TypeScript: the installed types resolve, with bigint ids and the document paths', async () => {
    writeFileSync(join(consumer, 'check.ts'), CONSUMER_TYPES);
    // No @types/node: a browser project's settings; the client needs only the DOM's fetch.
    const compilerOptions = { strict: true, noEmit: true, target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', lib: ['ES2022', 'DOM'], types: [] };
    writeFileSync(join(consumer, 'tsconfig.json'), JSON.stringify({ compilerOptions, files: ['check.ts'] }));
    try {
      await run(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json'], consumer);
    } catch (e) {
      assert.fail(`tsc failed on the installed package:\n${(e as { stdout?: string }).stdout ?? e}`);
    }
  });

  await t.test('Chromium: the ESM build runs in a page, resolved through an import map', async () => {
    const modules = join(consumer, 'node_modules');
    const importMap = {
      imports: {
        '@plant-store/client': `/consumer/@plant-store/client/${esmEntry(join(modules, '@plant-store/client'))}`,
        'openapi-fetch': `/consumer/openapi-fetch/${esmEntry(join(modules, 'openapi-fetch'))}`,
        'eventsource-parser': `/consumer/eventsource-parser/${esmEntry(join(modules, 'eventsource-parser'))}`,
      },
    };
    const page$ = `<!doctype html><meta charset="utf-8"><title>client</title><script type="importmap">${JSON.stringify(importMap)}</script>`;
    const page = await (await launchChromium(t)).newPage();
    page.setDefaultTimeout(10_000);
    const problems: string[] = [];
    page.on('pageerror', (e) => problems.push(e.message));
    // The page and the installed files come from the service's origin, so the client's requests are same-origin.
    const origin = new URL(s.url).origin;
    await page.route(`${origin}/consumer/**`, (route) => {
      const path = new URL(route.request().url()).pathname.replace(/^\/consumer\//, '');
      return path === 'index.html' ? route.fulfill({ contentType: 'text/html', body: page$ }) : route.fulfill({ path: join(modules, path), contentType: 'text/javascript' });
    });
    await page.goto(`${origin}/consumer/index.html`);
    const id = (ABOVE_2_53 + 10n).toString();
    const result = await page.evaluate(
      async ([baseUrl, token, id]) => {
        const { createPlantStoreClient, listAllPlants } = await import('@plant-store/client');
        const client = createPlantStoreClient({ baseUrl, token });
        const created = await client.POST('/plants', { body: { id: BigInt(id), name: 'browser fern' } });
        const read = await client.GET('/plants/{id}', { params: { path: { id: BigInt(id) } } });
        const listed: string[] = [];
        for await (const p of listAllPlants(client, { limit: 1 })) listed.push(`${typeof p.id} ${p.id}`);
        return { created: created.response.status, id: `${typeof read.data?.id} ${read.data?.id}`, listed };
      },
      [origin, s.token.all, id] as const,
    );
    assert.deepEqual(problems, []);
    assert.deepEqual(result, {
      created: 200,
      id: `bigint ${id}`,
      listed: [`bigint ${ABOVE_2_53}`, `bigint ${ABOVE_2_53 + 1n}`, `bigint ${id}`],
    });
  });
});
