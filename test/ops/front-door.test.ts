// What a newcomer meets first: `plant-store --version`, the version in /healthz and /readyz, GET / pointing at
// the docs page and the document, and a start-up line naming the docs page's URL.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { startApp, spawnServer, tempDir } from '../helpers/app.js';
import { eventually } from '../helpers/sleep.js';
import { runIn } from '../helpers/cli.js';

const PACKAGE_VERSION = (JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

test('plant-store --version prints the package version alone and exits 0, touching no database', async (t) => {
  const dir = tempDir(t);
  for (const flag of ['--version', '-v']) {
    const r = await runIn(dir, [flag]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, `${PACKAGE_VERSION}\n`);
    assert.equal(r.stderr, '');
  }
  assert.equal((await runIn(dir, ['config'])).code, 0);
  assert.deepEqual(readdirSync(dir), [], '--version or config created files');
});

test('/healthz and /readyz report the package version', async (t) => {
  const s = await startApp(t);
  for (const path of ['/healthz', '/readyz']) {
    const res = await fetch(`${s.url}${path}`);
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { status: 'ok', version: PACKAGE_VERSION });
  }
});

test('GET / answers a small JSON whose links lead to the docs page, the document and the health check', async (t) => {
  const s = await startApp(t);
  const res = await fetch(`${s.url}/`);
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
  const body = (await res.json()) as { service: string; version: string; links: Record<string, string> };
  assert.deepEqual(body, { service: 'plant-store', version: PACKAGE_VERSION, links: { docs: '/docs', openapi: '/openapi.json', health: '/healthz' } });
  const docs = await fetch(`${s.url}${body.links.docs}`);
  assert.equal(docs.status, 200);
  assert.match(await docs.text(), /<html/i);
  const document = await fetch(`${s.url}${body.links.openapi}`);
  assert.equal(document.status, 200);
  assert.equal(((await document.json()) as { openapi: string }).openapi.slice(0, 2), '3.');
  assert.equal((await fetch(`${s.url}${body.links.health}`)).status, 200);
  // The README names exactly these links.
  const readme = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8');
  const sentence = /`GET \/` links to ([\s\S]*?)\.(?:\s|$)/.exec(readme)?.[1];
  assert.ok(sentence, 'the README no longer says what GET / links to');
  assert.deepEqual([...sentence.matchAll(/`([^`]+)`/g)].map((m) => m[1]).sort(), Object.values(body.links).sort(), `the README: ${sentence}`);
});

test('serve logs the URL of the docs page when it starts listening, and that URL answers', async (t) => {
  const dir = tempDir(t);
  const server = await spawnServer(t, { DATABASE_URL: `sqlite:${dir}/x.db`, BOOTSTRAP_TOKEN: 'false' });
  type Line = { msg: string; docs?: string; version?: string };
  const line = await eventually(
    () => server.stdout().split('\n').filter(Boolean).map((l) => JSON.parse(l) as Line).find((l) => l.msg === 'plant-store is listening'),
    () => server.stdout(),
    5_000,
    50,
  );
  assert.equal(line.docs, `${server.url}/docs`);
  assert.equal(line.version, PACKAGE_VERSION);
  assert.equal((await fetch(line.docs)).status, 200);
  server.proc.kill('SIGTERM');
  assert.equal(await server.exited, 0);
});
