// PATCH is merged at commit, against the plant as committed: many concurrent PATCHes of one plant without
// If-Match all apply (no 503, no lost member), each answer shows what it stored with a version of its own, and
// in version order the answers are the patches applied one after another; with the same If-Match exactly one
// wins. In process on the engine under test, and through a server with two worker processes.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawnServer, startApp } from '../helpers/app.js';
import { eventually } from '../helpers/sleep.js';
import { databaseWithToken } from '../helpers/cli.js';

const PATCHES = 200;
const SAME_IF_MATCH = 50;

interface Server {
  url: string;
  read: string;
  write: string;
}

async function send(s: Server, method: string, body?: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${s.url}/plants/7`, {
    method,
    headers: {
      authorization: `Bearer ${method === 'GET' ? s.read : s.write}`,
      ...(body !== undefined && { 'content-type': method === 'PATCH' ? 'application/merge-patch+json' : 'application/json' }),
      ...headers,
    },
    ...(body !== undefined && { body }),
  });
  const text = await res.text();
  return { status: res.status, text, etag: res.headers.get('etag') };
}

const versionOf = (etag: string | null) => BigInt(/^"(\d+)"$/.exec(etag ?? '')?.[1] ?? assert.fail(`not a strong ETag: ${etag}`));

async function race(t: TestContext, s: Server): Promise<void> {
  const created = await fetch(`${s.url}/plants`, {
    method: 'POST',
    headers: { authorization: `Bearer ${s.write}`, 'content-type': 'application/json' },
    body: '{"id": 7, "name": "start", "tag": "t0"}',
  });
  assert.equal(created.status, 200, await created.text());

  // Even writers rename, odd ones retag: every patch changes the plant, and each leaves the other member alone.
  const patchOf = (i: number) => (i % 2 === 0 ? { name: `name ${i}` } : { tag: `tag ${i}` });
  const started = Date.now();
  const answers = await Promise.all(Array.from({ length: PATCHES }, (_, i) => send(s, 'PATCH', JSON.stringify(patchOf(i)))));
  t.diagnostic(`${PATCHES} concurrent PATCHes in ${Date.now() - started} ms`);
  const statuses = new Map<number, number>();
  for (const a of answers) statuses.set(a.status, (statuses.get(a.status) ?? 0) + 1);
  assert.deepEqual([...statuses], [[200, PATCHES]], `every PATCH answered 200: ${JSON.stringify([...statuses])} ${answers.find((a) => a.status !== 200)?.text ?? ''}`);

  const shown = answers.map((a, i) => ({ i, version: versionOf(a.etag), plant: JSON.parse(a.text) as { id: number; name: string; tag?: string } }));
  assert.equal(new Set(shown.map((a) => a.version)).size, PATCHES, 'each answer has a version of its own');
  // In version order, each answer is its patch merged into the one before: the merge saw every earlier commit.
  shown.sort((a, b) => (a.version < b.version ? -1 : 1));
  let stored = { id: 7, name: 'start', tag: 't0' };
  for (const a of shown) {
    stored = { ...stored, ...patchOf(a.i) };
    assert.deepEqual(a.plant, stored, `the answer to patch ${a.i} (version ${a.version})`);
  }
  const last = shown.at(-1)!;
  const read = await send(s, 'GET');
  assert.equal(read.status, 200);
  assert.deepEqual({ etag: versionOf(read.etag), plant: JSON.parse(read.text) }, { etag: last.version, plant: last.plant }, 'GET shows the largest');

  // The same If-Match from every writer: the first to commit wins, the rest find another version.
  const contested = await Promise.all(
    Array.from({ length: SAME_IF_MATCH }, (_, i) => send(s, 'PATCH', JSON.stringify({ name: `contender ${i}` }), { 'if-match': read.etag! })),
  );
  const won = contested.filter((a) => a.status === 200);
  assert.equal(won.length, 1, contested.map((a) => a.status).join(' '));
  assert.equal(contested.filter((a) => a.status === 412).length, SAME_IF_MATCH - 1, contested.map((a) => a.status).join(' '));
  assert.ok(versionOf(won[0]!.etag) > last.version);
  const after = await send(s, 'GET');
  assert.deepEqual({ text: after.text, etag: after.etag }, { text: won[0]!.text, etag: won[0]!.etag }, 'GET shows the winner');
}

test(`${PATCHES} concurrent PATCHes of one plant without If-Match all answer 200 with versions of their own, in commit order; the same If-Match lets one through`, async (t) => {
  const s = await startApp(t);
  await race(t, { url: s.url, read: s.token.read, write: s.token.write });
});

test(`the same through a server with two worker processes (WORKERS=2)`, async (t) => {
  const { databaseUrl, token } = await databaseWithToken(t);
  const server = await spawnServer(t, { DATABASE_URL: databaseUrl, BOOTSTRAP_TOKEN: 'false', WORKERS: '2', LOG_LEVEL: 'info' });
  await eventually(() => server.stdout().includes('plant-store is listening'), 'the primary announcing the server', 20_000);
  await race(t, { url: server.url, read: token, write: token });
  server.proc.kill('SIGTERM');
  await server.exited;
});
