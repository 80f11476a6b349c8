// The command line: --help on every command exits 0 and prints its usage (touching no database), and
// usage mistakes exit 2 with a pointer to --help.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '../helpers/app.js';
import { runIn } from '../helpers/cli.js';

const COMMANDS: { args: string[]; usage: RegExp }[] = [
  { args: [], usage: /^Usage: plant-store <command>/m },
  { args: ['serve'], usage: /^Usage: plant-store serve/m },
  { args: ['migrate'], usage: /^Usage: plant-store migrate/m },
  { args: ['config'], usage: /^Usage: plant-store config/m },
  { args: ['token'], usage: /^Usage: plant-store token/m },
  { args: ['token', 'create'], usage: /token create --scopes/ },
  { args: ['token', 'list'], usage: /token list/ },
  { args: ['token', 'revoke'], usage: /token revoke ID/ },
  { args: ['webhook', 'recover'], usage: /webhook recover ID --since TIME/ },
  { args: ['secrets'], usage: /^Usage: plant-store secrets/m },
  { args: ['secrets', 'rotate'], usage: /secrets rotate/ },
];

test('--help and -h on every command exit 0, print usage on stdout, and create no database', async (t) => {
  const dir = tempDir(t);
  const file = join(dir, 'must-not-exist', 'x.db');
  const env = { DATABASE_URL: `sqlite:${file}` };
  // --help everywhere, and the short form on a few (the same parser handles it everywhere).
  const runs = COMMANDS.flatMap(({ args, usage }) =>
    (args.length === 0 || args[0] === 'serve' || args[1] === 'create' ? ['--help', '-h'] : ['--help']).map(async (flag) => ({
      args: [...args, flag],
      usage,
      result: await runIn(dir, [...args, flag], env),
    })),
  );
  for (const { args, usage, result } of await Promise.all(runs)) {
    const what = `plant-store ${args.join(' ')}`;
    assert.equal(result.code, 0, `${what}: ${result.stderr}`);
    assert.match(result.stdout, usage, what);
    assert.equal(result.stderr, '', what);
  }
  assert.equal(existsSync(join(dir, 'must-not-exist')), false, 'a --help created the database');
  assert.equal(existsSync(join(dir, 'data')), false, 'a --help created the default database');
});

test('plant-store --help lists every command', async (t) => {
  const r = await runIn(tempDir(t), ['--help']);
  assert.equal(r.code, 0);
  for (const command of ['serve', 'migrate', 'config', 'token', 'secrets']) assert.match(r.stdout, new RegExp(`^\\s+${command}\\s`, 'm'), command);
});

test('config --help documents every variable that config prints', async (t) => {
  const dir = tempDir(t);
  const [help, config] = await Promise.all([runIn(dir, ['config', '--help']), runIn(dir, ['config'])]);
  assert.equal(config.code, 0, config.stderr);
  const names = config.stdout.trim().split('\n').map((l) => l.split('=')[0]!);
  assert.ok(names.length >= 8);
  for (const name of names) assert.match(help.stdout, new RegExp(`^\\s+${name}\\s`, 'm'), `${name} undocumented`);
});

test('usage mistakes exit 2 with a message on stderr and a pointer to --help', async (t) => {
  const dir = tempDir(t);
  const cases: { args: string[]; message: RegExp }[] = [
    { args: ['bogus'], message: /Unknown command "bogus"/ },
    { args: ['serve', '--bogus'], message: /bogus/ },
    { args: ['serve', 'extra'], message: /extra/ },
    { args: ['migrate', '--port', '80'], message: /port/ },
    { args: ['token', 'bogus'], message: /Unknown command "token bogus"/ },
  ];
  const results = await Promise.all(cases.map(async (c) => ({ ...c, r: await runIn(dir, c.args, { DATABASE_URL: `sqlite:${join(dir, 'x.db')}` }, 10_000) })));
  for (const { args, message, r } of results) {
    const what = `plant-store ${args.join(' ')}`;
    assert.equal(r.signal, null, `${what} kept running`);
    assert.equal(r.code, 2, `${what}: ${r.stderr}`);
    assert.match(r.stderr, message, what);
    assert.match(r.stderr, /--help/, what);
  }
  assert.equal(existsSync(join(dir, 'x.db')), false, 'a usage error touched the database');
});

test('plant-store with no command prints the usage and exits 2', async (t) => {
  const r = await runIn(tempDir(t), []);
  assert.equal(r.code, 2);
  assert.match(r.stdout + r.stderr, /Usage: plant-store <command>/);
});
