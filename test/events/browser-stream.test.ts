// A page in Chromium (Debian's, driven by playwright-core) follows the store live with the lines docs/events.md
// gives, taken from the doc as written: it makes a stream ticket, opens a native EventSource with it on another
// origin (CORS), reads the plants while they change, keeps the highest version of each, and survives a
// restart of the server by EventSource's own reconnect. It ends with the server's plants, having handled every
// event after its stream opened exactly once, in the feed's order.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual } from 'node:util';
import { migratedDatabaseUrl, runCli, spawnServer } from '../helpers/app.js';
import { launchChromium } from '../helpers/chromium.js';
import { freePort } from '../helpers/ports.js';
import { eventually } from '../helpers/sleep.js';

const DOC = readFileSync(fileURLToPath(new URL('../../../docs/events.md', import.meta.url)), 'utf8');

/** The page's lines: the js block of the doc's "In a browser" section. */
function pageLines(): string {
  const section = DOC.slice(DOC.indexOf('## In a browser'));
  const block = /```js\n([\s\S]*?)```/.exec(section);
  assert.ok(block, 'docs/events.md has no js block under "In a browser"');
  return block[1]!;
}

async function token(env: Record<string, string>, scopes: string): Promise<string> {
  const made = await runCli(['token', 'create', '--scopes', scopes, '--name', scopes], env);
  assert.equal(made.code, 0, made.stderr);
  return made.stdout.trimEnd().split('\n').at(-1)!;
}

interface Listed {
  id: number;
  name: string;
  tag?: string;
  version: number;
}

test('a page follows the plants with the lines of docs/events.md: a ticket, a native EventSource across a restart, a list joined by version', { timeout: 120_000 }, async (t) => {
  const pagePort = await freePort();
  const origin = `http://127.0.0.1:${pagePort}`;
  const port = await freePort();
  const env = { DATABASE_URL: await migratedDatabaseUrl(t), PORT: String(port), WORKERS: '1', CORS_ORIGINS: origin, BOOTSTRAP_TOKEN: 'false' };
  const [reader, writer] = [await token(env, 'plants:read'), await token(env, 'plants:write')];
  let server = await spawnServer(t, env);
  const api = server.url;

  // Changes from outside: creates, renames, tag changes and deletes over a few ids, so that a plant may change
  // while the page reads the list, and be deleted and made again.
  let written = 0;
  const change = async (i: number) => {
    const id = 1 + (i % 7);
    const kind = i % 5;
    const url = `${api}/plants${kind === 0 ? '' : `/${id}`}`;
    const headers = { authorization: `Bearer ${writer}`, 'content-type': kind === 3 ? 'application/merge-patch+json' : 'application/json' };
    const [method, body] =
      kind === 0 ? ['POST', { id, name: `plant ${id}` }] : kind === 4 ? ['DELETE', undefined] : kind === 3 ? ['PATCH', { tag: `t${i}` }] : ['PUT', { name: `plant ${id} #${i}` }];
    const res = await fetch(url, { method, headers, ...(body && { body: JSON.stringify(body) }) });
    await res.arrayBuffer();
    if (res.status < 300) written++;
  };
  for (let i = 0; i < 35; i++) await change(i * 5);

  const page = http.createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(`<!doctype html><meta charset="utf-8"><title>plants</title><script type="module">
      const API = ${JSON.stringify(api)};
      const TOKEN = ${JSON.stringify(reader)};
      // What the test reads: each EventSource made, each open, and the id of every event handled.
      window.made = 0; window.opens = 0; window.seen = [];
      const Native = window.EventSource;
      window.EventSource = class extends Native {
        constructor(url) {
          super(url);
          window.made++;
          this.addEventListener('open', () => window.opens++);
          for (const type of ['newPlant', 'plantUpdated', 'plantDeleted']) this.addEventListener(type, (e) => window.seen.push(e.lastEventId));
        }
      };
      function render() {}
      ${pageLines()}
      window.plants = plants;
      window.ready = true;
    </script>`);
  });
  await new Promise<void>((resolve) => page.listen(pagePort, '127.0.0.1', resolve));
  t.after(() => page.close());

  const browser = await launchChromium(t);
  const tab = await browser.newPage();
  const problems: string[] = [];
  tab.on('pageerror', (err) => problems.push(String(err)));
  await tab.goto(`${origin}/`);
  // Plants change while the page opens its stream and reads the list.
  for (let i = 0; i < 60; i++) await change(i * 3 + 1);
  await tab.waitForFunction(() => (globalThis as unknown as { ready?: boolean }).ready === true, undefined, { timeout: 20_000 });

  // The server stops (SIGTERM ends the stream cleanly) and comes back on the same port; the page's EventSource
  // reconnects by itself, with its ticket and Last-Event-ID, after the stream's retry.
  server.proc.kill('SIGTERM');
  assert.equal(await server.exited, 0);
  server = await spawnServer(t, env);
  for (let i = 0; i < 40; i++) await change(i * 7 + 2);
  assert.ok(written > 60, `only ${written} changes succeeded`);

  const read = (path: string) => fetch(`${api}${path}`, { headers: { authorization: `Bearer ${reader}` } }).then((r) => r.json());
  const readFeed = async () => ((await read('/events?limit=1000')) as { id: string }[]).map((e) => e.id);
  const readList = async () => ((await read('/plants?limit=1000')) as Listed[]).sort((a, b) => a.id - b.id);
  const state = async () => tab.evaluate(() => {
    const w = globalThis as unknown as { plants: Map<number, { version: number; plant: Listed | null }>; seen: string[]; made: number; opens: number };
    return {
      plants: [...w.plants].filter(([, v]) => v.plant !== null).map(([id, v]) => ({ ...v.plant!, id, version: v.version })).sort((a, b) => a.id - b.id),
      seen: [...w.seen],
      made: w.made,
      opens: w.opens,
    };
  });
  // The feed is read again each time: on PostgreSQL a committed event joins the feed in the sequencer's next
  // pass, so a feed read at once may still lack the last writes' events. Done when the page's last event is the
  // feed's last and its plants are the list's.
  let last: { feed: string[]; listed: Listed[]; page?: Awaited<ReturnType<typeof state>> } = { feed: [], listed: [] };
  const { feed, listed, page: seen } = await eventually(async () => {
    last = { feed: await readFeed(), listed: await readList(), page: await state() };
    return last.page!.seen.at(-1) === last.feed.at(-1) && isDeepStrictEqual(last.page!.plants, last.listed) && last;
  }, () => `the page's last event is the feed's last (${last.feed.at(-1)}; the page's: ${last.page?.seen.at(-1)}) and its plants are the list's`, 20_000);

  // Every event after the first the page handled, once each, in the feed's order: nothing missed across the restart.
  const from = feed.indexOf(seen!.seen[0]!);
  assert.ok(from >= 0, 'the page handled an event the feed does not hold');
  assert.deepEqual(seen!.seen, feed.slice(from));
  assert.equal(seen!.made, 1, 'one EventSource: the restart was bridged by its own reconnect, with the same ticket');
  assert.ok(seen!.opens >= 2, `the EventSource opened ${seen!.opens} times, not again after the restart`);
  // And the page shows what the server holds, version for version.
  assert.deepEqual(seen!.plants, listed);
  assert.deepEqual(problems, []);
});
