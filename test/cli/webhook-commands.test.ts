// `plant-store webhook add|list|remove|deliveries|retry`: the same rules as the API (URL checks, SSRF guard),
// the secret alone on the last line once, never in a listing; usage errors exit 2, unknown ids exit 1.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { runCli, startApp, tempDir, migratedDatabaseUrl } from '../helpers/app.js';
import { lastLine } from '../helpers/cli.js';

const SECRET = /^whsec_[A-Za-z0-9+/=]{20,}$/;

async function envFor(t: Parameters<typeof tempDir>[0], extra: Record<string, string> = {}): Promise<Record<string, string>> {
  return { DATABASE_URL: (await migratedDatabaseUrl(t)), ...extra };
}

test('webhook --help, each subcommand --help, and no subcommand', async () => {
  const env = { DATABASE_URL: 'sqlite:/nonexistent/never/created.db' };
  const [top, bare, ...subs] = await Promise.all([
    runCli(['webhook', '--help'], env),
    runCli(['webhook'], env),
    ...['add', 'list', 'remove', 'deliveries', 'retry', 'enable'].map((sub) => runCli(['webhook', sub, '--help'], env)),
  ]);
  assert.equal(top!.code, 0, top!.stderr);
  for (const sub of ['add URL', 'list', 'remove ID', 'deliveries ID', 'retry ID DELIVERY_ID', 'enable ID']) assert.ok(top!.stdout.includes(`webhook ${sub}`), sub);
  assert.equal(bare!.code, 2);
  assert.equal(bare!.stdout, top!.stdout);
  for (const [i, sub] of ['add', 'list', 'remove', 'deliveries', 'retry', 'enable'].entries()) {
    assert.equal(subs[i]!.code, 0, subs[i]!.stderr);
    assert.match(subs[i]!.stdout, new RegExp(`^Usage:\\n  webhook ${sub}`));
  }
  const main = await runCli(['--help'], env);
  assert.match(main.stdout, /webhook +Manage plant event webhook subscriptions/);
});

test('usage errors exit 2 and touch nothing', async (t) => {
  const env = await envFor(t);
  const cases: string[][] = [
    ['webhook', 'frobnicate'],
    ['webhook', 'add'],
    ['webhook', 'add', 'http://127.0.0.1/a', 'http://127.0.0.1/b'],
    ['webhook', 'add', 'http://127.0.0.1/a', '--json'],
    ['webhook', 'add', 'http://127.0.0.1/a', '--bogus'],
    ['webhook', 'list', 'extra'],
    ['webhook', 'list', '--description', 'x'],
    ['webhook', 'remove'],
    ['webhook', 'remove', 'wh_a', 'wh_b'],
    ['webhook', 'deliveries'],
    ['webhook', 'deliveries', 'wh_a', '--limit', '0'],
    ['webhook', 'deliveries', 'wh_a', '--limit', '1001'],
    ['webhook', 'deliveries', 'wh_a', '--limit', 'ten'],
    ['webhook', 'retry', 'wh_a'],
    ['webhook', 'enable'],
    ['webhook', 'enable', 'wh_a', 'wh_b'],
    ['webhook', 'remove', ''],
  ];
  const results = await Promise.all(cases.map((args) => runCli(args, env)));
  for (const [i, res] of results.entries()) {
    assert.equal(res.code, 2, `${cases[i]!.join(' ')}: ${res.stderr}`);
    assert.match(res.stderr, /^plant-store: /, cases[i]!.join(' '));
    assert.equal(res.stdout, '', cases[i]!.join(' '));
  }
});

test('webhook add refuses what the API refuses (exit 2): bad schemes, credentials, private hosts unless allowed', async (t) => {
  const env = await envFor(t);
  const urls = ['not a url', 'ftp://1.1.1.1/x', 'javascript:alert(1)', 'http://u:p@1.1.1.1/x', 'http://127.0.0.1:9/x', 'http://10.1.2.3/x', 'http://169.254.169.254/', `https://1.1.1.1/${'a'.repeat(2048)}`];
  const results = await Promise.all(urls.map((url) => runCli(['webhook', 'add', url], env)));
  for (const [i, res] of results.entries()) {
    assert.equal(res.code, 2, `${urls[i]}: ${res.stdout} ${res.stderr}`);
    assert.match(res.stderr, /^plant-store: /);
    assert.doesNotMatch(res.stdout, /whsec_/);
  }
  // The internal addresses are refused naming the setting that would allow them.
  for (const i of [4, 5]) assert.match(results[i]!.stderr, /To allow it, list \S+ in WEBHOOK_ALLOWED_HOSTS/, urls[i]);
  // A cloud metadata address cannot be allowed.
  assert.match(results[6]!.stderr, /169\.254\.169\.254 is a cloud metadata or host address, which is never allowed/);
  const tooLong = await runCli(['webhook', 'add', 'https://1.1.1.1/x', '--description', 'd'.repeat(501)], env);
  assert.equal(tooLong.code, 2, tooLong.stderr);
  const list = await runCli(['webhook', 'list', '--json'], env);
  assert.deepEqual(JSON.parse(list.stdout), []);

  // WEBHOOK_ALLOWED_HOSTS opens 127.0.0.1 for the CLI too.
  const allowed = await runCli(['webhook', 'add', 'http://127.0.0.1:9/x'], { ...env, WEBHOOK_ALLOWED_HOSTS: '127.0.0.1' });
  assert.equal(allowed.code, 0, allowed.stderr);
  assert.match(lastLine(allowed.stdout), SECRET);
});

test('webhook add, list, deliveries, remove on the database the server reads; secrets shown once only', async (t) => {
  const env = await envFor(t);
  const add = await runCli(['webhook', 'add', 'https://1.1.1.1/hooks/plants', '--description', 'inventory\nsync'], env);
  assert.equal(add.code, 0, add.stderr);
  const secret = lastLine(add.stdout);
  assert.match(secret, SECRET);
  assert.equal(add.stdout.split(secret).length, 2, 'the secret is printed exactly once');
  const id = /\b(wh_[A-Za-z0-9_-]+)/.exec(add.stdout)?.[1];
  assert.ok(id, add.stdout);
  const second = await runCli(['webhook', 'add', 'https://1.1.1.1/second'], env);
  assert.equal(second.code, 0, second.stderr);
  const secondId = /\b(wh_[A-Za-z0-9_-]+)/.exec(second.stdout)![1]!;

  const [table, json] = await Promise.all([runCli(['webhook', 'list'], env), runCli(['webhook', 'list', '--json'], env)]);
  assert.equal(table.code, 0, table.stderr);
  assert.equal(json.code, 0, json.stderr);
  for (const out of [table.stdout, json.stdout]) {
    assert.ok(!out.includes('whsec_'), 'a secret in a listing');
    assert.ok(out.includes(id) && out.includes(secondId));
  }
  // The table is a header and one line per subscription: the newline in the description is shown escaped.
  const lines = table.stdout.trimEnd().split('\n');
  assert.equal(lines.length, 3, table.stdout);
  assert.match(lines[0]!, /^ID +URL +EVENTS +FORMAT +ACTIVE +CREATED +DESCRIPTION$/);
  assert.ok(lines[1]!.startsWith(id) && lines[1]!.includes('inventory\\u000async'), lines[1]);
  assert.ok(lines[2]!.startsWith(secondId));
  const rows = JSON.parse(json.stdout) as Array<Record<string, unknown>>;
  assert.deepEqual(
    rows.map((r) => [r.id, r.url, r.active, r.description, 'secret' in r]),
    [
      [id, 'https://1.1.1.1/hooks/plants', true, 'inventory\nsync', false],
      [secondId, 'https://1.1.1.1/second', true, undefined, false],
    ],
  );

  // A server on the same database sees what the CLI wrote, in the same shape.
  const s = await startApp(t, { databaseUrl: env.DATABASE_URL! });
  const manage = (await s.tokens.create({ name: 'hooks', scopes: ['webhooks:manage'] })).secret;
  const viaApi = await fetch(`${s.url}/webhooks`, { headers: { authorization: `Bearer ${manage}` } });
  assert.deepEqual(await viaApi.json(), rows);

  const deliveries = await runCli(['webhook', 'deliveries', id, '--json'], env);
  assert.equal(deliveries.code, 0, deliveries.stderr);
  assert.deepEqual(JSON.parse(deliveries.stdout), []);
  const none = await runCli(['webhook', 'deliveries', id], env);
  assert.equal(none.code, 0);
  assert.match(none.stdout, /No deliveries/);

  const removed = await runCli(['webhook', 'remove', id], env);
  assert.equal(removed.code, 0, removed.stderr);
  assert.match(removed.stdout, new RegExp(`Removed webhook subscription ${id}`));
  const after = JSON.parse((await runCli(['webhook', 'list', '--json'], env)).stdout) as Array<{ id: string }>;
  assert.deepEqual(
    after.map((r) => r.id),
    [secondId],
  );
  const empty = await runCli(['webhook', 'list'], await envFor(t));
  assert.equal(empty.code, 0);
  assert.match(empty.stdout, /No webhook subscriptions/);
});

test('unknown subscriptions and deliveries exit 1 with a message', async (t) => {
  const env = await envFor(t);
  const add = await runCli(['webhook', 'add', 'https://1.1.1.1/x'], env);
  const id = /\b(wh_[A-Za-z0-9_-]+)/.exec(add.stdout)![1]!;
  const cases: Array<[string[], RegExp]> = [
    [['webhook', 'remove', 'wh_nope'], /No webhook subscription with id wh_nope/],
    [['webhook', 'deliveries', 'wh_nope'], /No webhook subscription with id wh_nope/],
    [['webhook', 'retry', 'wh_nope', 'dlv_nope'], /No webhook subscription with id wh_nope/],
    [['webhook', 'retry', id, 'dlv_nope'], /No delivery dlv_nope/],
  ];
  for (const [args, message] of cases) {
    const res = await runCli(args, env);
    assert.equal(res.code, 1, `${args.join(' ')}: ${res.stderr}`);
    assert.match(res.stderr, message);
    assert.equal(res.stdout, '');
  }
  // Removing twice: the second is not found.
  assert.equal((await runCli(['webhook', 'remove', id], env)).code, 0);
  assert.equal((await runCli(['webhook', 'remove', id], env)).code, 1);
});
