// The console's Events view in Chromium, from the user's side: a plant created over HTTP arrives live with its type,
// id (above 2^53, digit for digit) and version; the type and plant filters narrow the stream; a write made while
// paused is held and shown on resume; "Older events" pages the feed up to the live events, each event listed once;
// at 390 pixels nothing scrolls sideways and axe-core finds no serious or critical violation; a token without
// plants:read is told so. And across a restart of the server, and the end of its ticket, the stream resumes from
// its last event: the writes made meanwhile are each shown once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { migratedDatabaseUrl, runCli, spawnServer, startApp } from '../helpers/app.js';
import { freePort } from '../helpers/ports.js';
import { eventually } from '../helpers/sleep.js';
import { openConsole, violations } from './kit.js';

const BIG_ID = '9007199254740993';

/** The rows of a table of events, as cells' text: time, type, plant id, version, event id. */
async function rows(page: Page, caption: string): Promise<string[][]> {
  const table = page.getByRole('table', { name: caption });
  if ((await table.count()) === 0) return [];
  return table.locator('tbody tr').evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent ?? '')));
}

/** Waits until the live table holds a row of this type, plant and version. */
async function liveRow(page: Page, type: string, plant: string, version?: string): Promise<string[]> {
  return eventually(
    async () => (await rows(page, 'Live events, newest first')).find((r) => r[1] === type && r[2] === plant && (version === undefined || r[3] === version)),
    `a live ${type} of plant ${plant}${version === undefined ? '' : ` at version ${version}`}`,
    10_000,
    50,
  );
}

const versionOf = (res: Response) => res.headers.get('etag')!.replaceAll('"', '');

test('the Events view: a live event with its id exact, filters by type and plant, pause and resume, older events once each; 390 px, no serious axe violation', { timeout: 120_000 }, async (t) => {
  const s = await startApp(t);
  const write = (method: string, id: string, body?: string) =>
    fetch(`${s.url}/plants/${id}`, { method, headers: { authorization: `Bearer ${s.token.all}`, 'content-type': 'application/json' }, ...(body && { body }) });
  for (const id of [1, 2]) assert.equal((await s.postPlant({ id, name: `fern ${id}` })).status, 200);

  const { page, problems, elsewhere, requests } = await openConsole(t, s.url, { token: s.token.all, width: 390 });
  await page.getByRole('link', { name: 'Events' }).click();
  await page.getByRole('heading', { name: 'Events', level: 1 }).waitFor();
  await page.getByRole('status').filter({ hasText: 'Live' }).waitFor();

  // Created over HTTP, shown live: the id as written (a JSON.parse would show ...992).
  const created = await s.postPlant(`{"id":${BIG_ID},"name":"Monstera"}`);
  assert.equal(created.status, 200);
  const version1 = versionOf(await write('GET', BIG_ID));
  const first = await liveRow(page, 'newPlant', BIG_ID, version1);
  assert.match(first[4]!, /^msg_/);
  assert.ok(!Number.isNaN(Date.parse((await page.locator('time').first().getAttribute('datetime'))!)));

  // Type: only deletions. The update is placed before the delete, so once the delete shows, the update was left out.
  await page.getByLabel('Type').selectOption('plantDeleted');
  await page.getByRole('button', { name: 'Apply filters' }).click();
  assert.equal((await write('PUT', '1', '{"name":"fern one"}')).status, 200);
  const deleted = await write('DELETE', '2');
  assert.equal(deleted.status, 204);
  await liveRow(page, 'plantDeleted', '2');
  assert.deepEqual((await rows(page, 'Live events, newest first')).map((r) => r[1]), ['plantDeleted']);

  // Plant: only the big plant's events, all types again.
  await page.getByLabel('Type').selectOption('');
  await page.getByLabel('Plant ID').fill(BIG_ID);
  await page.getByRole('button', { name: 'Apply filters' }).click();
  assert.equal((await write('PUT', '1', '{"name":"fern uno"}')).status, 200);
  const renamed = await write('PUT', BIG_ID, '{"name":"Monstera deliciosa"}');
  await liveRow(page, 'plantUpdated', BIG_ID, versionOf(renamed));
  assert.deepEqual((await rows(page, 'Live events, newest first')).map((r) => r[2]), [BIG_ID]);

  // Paused: a write is held, not shown, and shown on resume.
  await page.getByRole('button', { name: 'Pause' }).click();
  const later = await write('PUT', BIG_ID, '{"name":"Monstera adansonii"}');
  await page.getByRole('status').filter({ hasText: '1 new event held' }).waitFor();
  assert.equal((await rows(page, 'Live events, newest first')).length, 1, 'nothing shown while paused');
  await page.getByRole('button', { name: 'Resume' }).click();
  await liveRow(page, 'plantUpdated', BIG_ID, versionOf(later));

  // Older events: the feed from its oldest event, up to those listed live; the creation alone is older.
  await page.getByRole('button', { name: 'Older events' }).click();
  await page.getByText('All older events are shown.').waitFor();
  const older = await rows(page, 'Older events, oldest first');
  assert.deepEqual(older.map((r) => [r[1], r[2], r[3]]), [['newPlant', BIG_ID, version1]]);
  assert.equal(older[0]![4], first[4], 'the same event as the live one before the filter');
  const ids = [...(await rows(page, 'Live events, newest first')), ...older].map((r) => r[4]);
  assert.equal(new Set(ids).size, ids.length, `each event listed once: ${ids.join(', ')}`);
  assert.equal(ids.length, 3);

  assert.ok(await page.evaluate(() => {
    const w = globalThis as unknown as { innerWidth: number; document: { documentElement: { scrollWidth: number } } };
    return w.document.documentElement.scrollWidth <= w.innerWidth;
  }), 'nothing scrolls sideways at 390 px');
  assert.deepEqual(await violations(page), [], 'the events view');
  assert.deepEqual(problems, []);
  assert.deepEqual(elsewhere(), []);
  const streamUrls = requests.filter((u) => new URL(u).pathname === '/events' && new URL(u).searchParams.has('ticket'));
  assert.ok(streamUrls.length > 0, 'the stream was opened with a ticket');
  assert.deepEqual(requests.filter((u) => u.includes('pst_')), [], 'no token in any address');

  // A token without plants:read is told what it lacks, and the page asks for no ticket.
  const writer = await openConsole(t, s.url, { token: s.token.write, browser: page.context().browser()! });
  await writer.page.getByRole('link', { name: 'Events' }).click();
  await writer.page.getByText('the feed and its stream need the plants:read scope').waitFor();
  assert.deepEqual(writer.requests.filter((u) => u.includes('/events')), []);
  assert.deepEqual(writer.problems, []);
});

test('the Events view across a server restart and a ticket\'s end: the stream resumes from its last event, and each write made meanwhile shows once', { timeout: 120_000 }, async (t) => {
  // A real server on a fixed port, stopped and started again on the same store, as an operator restarts it.
  // Tickets live their shortest allowed time, so the page must also make a new one.
  const env = { DATABASE_URL: await migratedDatabaseUrl(t), PORT: String(await freePort()), WORKERS: '1', BOOTSTRAP_TOKEN: 'false', EVENTS_TICKET_SECONDS: '10' };
  const made = await runCli(['token', 'create', '--scopes', 'plants:read,plants:write', '--name', 'console'], env);
  assert.equal(made.code, 0, made.stderr);
  const token = made.stdout.trimEnd().split('\n').at(-1)!;
  let server = await spawnServer(t, env);
  const create = async (id: number) => {
    const res = await fetch(`${server.url}/plants`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ id, name: `plant ${id}` }) });
    assert.equal(res.status, 200);
  };

  // While the server is down, the page's reconnects fail; Chromium logs them.
  const { page, problems } = await openConsole(t, server.url, { token, expected: /ERR_CONNECTION_REFUSED|status of (401|403|409)/ });
  // Each time the page opens the stream, with what it resumes from (the header is the browser's own).
  const streams: Promise<{ url: string; lastEventId?: string }>[] = [];
  page.on('request', (r) => {
    if (new URL(r.url()).pathname === '/events' && r.url().includes('ticket=')) streams.push(r.allHeaders().then((h) => ({ url: r.url(), lastEventId: h['last-event-id'] })));
  });
  await page.getByRole('link', { name: 'Events' }).click();
  await page.getByRole('status').filter({ hasText: 'Live' }).waitFor();
  await create(1);
  const [before] = await eventually(async () => {
    const live = await rows(page, 'Live events, newest first');
    return live.length === 1 && live;
  }, 'the first plant live');
  const lastBefore = before![4]!;

  server.proc.kill('SIGTERM');
  assert.equal(await server.exited, 0);
  const opened = streams.length;
  server = await spawnServer(t, env);
  // Written before the page is back (its reconnect waits the stream's retry), then after.
  await create(2);
  await create(3);
  await eventually(async () => streams.length > opened, 'the page opening its stream again');
  await create(4);

  // Each event once, in the feed's order (newest first on screen). On PostgreSQL an event takes its place in
  // the feed moments after its commit.
  const feed = (n: number) =>
    eventually(async () => {
      const events = (await (await fetch(`${server.url}/events`, { headers: { authorization: `Bearer ${token}` } })).json()) as { id: string }[];
      return events.length === n && events.map((e) => e.id);
    }, `${n} events in the feed`);
  const shown = (n: number) =>
    eventually(async () => {
      const ids = (await rows(page, 'Live events, newest first')).map((r) => r[4]!);
      return ids.length >= n && ids.reverse();
    }, `${n} events live`);
  assert.deepEqual(await shown(4), await feed(4));
  // The server resumed it: the stream opened again from the last event shown before the restart (EventSource's
  // Last-Event-ID, with the same ticket), not from the start of the feed.
  const reopened = await streams[opened]!;
  assert.equal(reopened.lastEventId ?? new URL(reopened.url).searchParams.get('after'), lastBefore, reopened.url);

  // The ticket ends (EVENTS_TICKET_SECONDS) and so does its stream; the reconnect is refused, and the page makes a
  // new ticket that resumes with `after`, from the last event it showed.
  const renewed = await eventually(async () => {
    for (const p of streams.slice(opened + 1)) {
      const after = new URL((await p).url).searchParams.get('after');
      if (after) return after;
    }
    return undefined;
  }, 'a stream opened with a new ticket', 30_000);
  const ids = await feed(4);
  assert.ok(ids.includes(renewed), renewed);
  await create(5);
  assert.deepEqual(await shown(5), await feed(5));
  assert.deepEqual(problems, []);
});
