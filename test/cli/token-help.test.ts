// `plant-store token --help` and the help of each token subcommand; unknown subcommands are usage errors.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { runCli, tempDir, freshDatabaseUrl } from '../helpers/app.js';

test('token --help and --help on every token subcommand exit 0 with the usage on stdout', async (t) => {
  const file = join(tempDir(t), 'x.db');
  const env = { DATABASE_URL: `sqlite:${file}` };
  const variants = [['--help'], ['create', '--help'], ['list', '-h'], ['revoke', '--help']];
  const results = await Promise.all(variants.map((v) => runCli(['token', ...v], env)));
  results.forEach((res, i) => {
    const label = variants[i]!.join(' ');
    assert.equal(res.code, 0, `${label}: ${res.stderr}`);
    assert.equal(res.stderr, '', label);
    assert.match(res.stdout, /Usage: plant-store token/, label);
    for (const word of ['create', 'list', 'revoke', '--scopes', '--name', '--expires', 'plants:read', 'plants:write']) {
      assert.ok(res.stdout.includes(word), `${label}: help does not mention ${word}`);
    }
  });
  // Help touches no database.
  assert.equal(existsSync(file), false);
});

test('token without a subcommand, or with an unknown one, is a usage error (exit 2)', async (t) => {
  const env = { DATABASE_URL: (await freshDatabaseUrl(t)) };
  const [none, unknown] = await Promise.all([runCli(['token'], env), runCli(['token', 'delete', 'tok_x'], env)]);
  assert.equal(none.code, 2);
  assert.match(none.stdout + none.stderr, /create/);
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /delete/);
});
