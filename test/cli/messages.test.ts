// What the CLI says when it refuses: sentences on stderr ("plant-store: " and a capitalised sentence ending
// in a full stop), one wording for an unknown command or option at every level with the usage to read, and
// an option named like a setting (serve --port) answered with the environment variable to set.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { migratedDatabaseUrl, runCli } from '../helpers/app.js';

/** Every "plant-store: " line is one sentence or more: a capital (or quote) first, a full stop last. */
function assertSentences(stderr: string, label: string): void {
  const lines = stderr.split('\n').filter((l) => l.startsWith('plant-store: '));
  assert.ok(lines.length > 0, `${label}: no message`);
  for (const l of lines) {
    assert.match(l, /^plant-store: [A-Z"`].*\.$/, `${label}: ${l}`);
    assert.doesNotMatch(l, /\.: |is (a|an) [a-z-]+ address is|already-applied|is (succeeded|pending);/, `${label}: ${l}`);
  }
}

test('unknown commands and options are worded one way at every level, with the usage to read (exit 2)', async (t) => {
  const env = { DATABASE_URL: await migratedDatabaseUrl(t) };
  const cases: Array<[string[], RegExp, string]> = [
    [['frobnicate'], /^plant-store: Unknown command "frobnicate"\.$/m, '--help'],
    [['token', 'delete'], /^plant-store: Unknown command "token delete": use token create, list or revoke\.$/m, 'token --help'],
    [['webhook', 'ping'], /^plant-store: Unknown command "webhook ping": use webhook add, list, remove, deliveries, retry, recover or enable\.$/m, 'webhook --help'],
    [['--bogus'], /^plant-store: Unknown command "--bogus"\.$/m, '--help'],
    [['migrate', '--bogus'], /^plant-store: Unknown option --bogus for "migrate"\.$/m, 'migrate --help'],
    [['token', 'create', '--bogus'], /^plant-store: Unknown option --bogus for "token create"\.$/m, 'token create --help'],
    [['token', 'list', '--name', 'x'], /^plant-store: Unknown option --name for "token list"\.$/m, 'token list --help'],
    [['webhook', 'add', 'https://1.1.1.1/x', '--json'], /^plant-store: Unknown option --json for "webhook add"\.$/m, 'webhook add --help'],
    [['import', '--bogus', 'a.csv'], /^plant-store: Unknown option --bogus for "import"\.$/m, 'import --help'],
    [['export', '--tag', 'x'], /^plant-store: Unknown option --tag for "export"\.$/m, 'export --help'],
    [['token', 'create', '--scopes'], /^plant-store: Option --scopes needs a value\.$/m, 'token create --help'],
  ];
  for (const [args, message, help] of cases) {
    const res = await runCli(args, env);
    const label = args.join(' ');
    assert.equal(res.code, 2, `${label}: ${res.stderr}`);
    assert.match(res.stderr, message, label);
    assert.ok(res.stderr.endsWith(`\nRun npx plant-store ${help} for usage.\n`), `${label}: ${res.stderr}`);
    assertSentences(res.stderr, label);
    assert.equal(res.stdout, '', label);
  }
});

test('an option named like a setting points at the environment variable: serve --port suggests PORT=', async () => {
  const env = { DATABASE_URL: 'sqlite:/nonexistent/never/created.db' };
  const cases: Array<[string[], string]> = [
    [['serve', '--port', '9090'], 'PORT=9090 npx plant-store serve'],
    [['serve', '--port=9090'], 'PORT=9090 npx plant-store serve'],
    [['serve', '--host'], 'HOST=VALUE npx plant-store serve'],
    [['token', 'list', '--database-url', 'sqlite:x.db'], 'DATABASE_URL=sqlite:x.db npx plant-store token list'],
  ];
  for (const [args, hint] of cases) {
    const res = await runCli(args, env);
    assert.equal(res.code, 2, res.stderr);
    assert.ok(res.stderr.includes(`Settings come from the environment: ${hint}.`), `${args.join(' ')}: ${res.stderr}`);
    assertSentences(res.stderr, args.join(' '));
  }
  const help = await runCli(['serve', '--help'], env);
  assert.match(help.stdout, /PORT=9090 HOST=0\.0\.0\.0 npx plant-store serve/);
});

test('refusals are sentences: an unreachable database, an internal webhook address, a retry that cannot be done', async (t) => {
  const env = { DATABASE_URL: await migratedDatabaseUrl(t) };
  const unreachable = await runCli(['token', 'list'], { DATABASE_URL: 'postgres://u:secret@127.0.0.1:1/plants', DATABASE_CONNECT_TIMEOUT_MS: '1000' });
  assert.equal(unreachable.code, 1);
  assert.match(unreachable.stderr, /ECONNREFUSED/);
  assert.doesNotMatch(unreachable.stderr, /secret/);
  assertSentences(unreachable.stderr, 'unreachable');

  const loopback = await runCli(['webhook', 'add', 'http://localhost:9/hook'], env);
  assert.equal(loopback.code, 2);
  assert.match(loopback.stderr, /its host localhost resolves to (127\.0\.0\.1|::1), which is a loopback address\. To allow it, list localhost in WEBHOOK_ALLOWED_HOSTS, for the server too/);
  assertSentences(loopback.stderr, 'loopback');
  const literal = await runCli(['webhook', 'add', 'http://10.1.2.3/hook'], env);
  assert.match(literal.stderr, /10\.1\.2\.3 is a private \(RFC 1918\) address\. To allow it, list 10\.1\.2\.3 in WEBHOOK_ALLOWED_HOSTS/);

  const add = await runCli(['webhook', 'add', 'https://1.1.1.1/hook'], env);
  const id = /\b(wh_[A-Za-z0-9_-]+)/.exec(add.stdout)![1]!;
  for (const args of [['webhook', 'retry', id, 'dlv_nope'], ['webhook', 'enable', id], ['token', 'revoke', 'tok_nope']]) {
    const res = await runCli(args, env);
    assert.equal(res.code, 1, `${args.join(' ')}: ${res.stderr}`);
    assertSentences(res.stderr, args.join(' '));
  }
  assert.match((await runCli(['webhook', 'enable', id], env)).stderr, /is already enabled\./);
});
