// Configuration from the environment: bad values stop `serve` (exit 1, the variable named), `plant-store
// config` shows the effective values with secrets masked, and the defaults are what docs/configuration.md promises.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { errorOf, tempDir } from '../helpers/app.js';
import { openStore } from '../../src/storage/open-store.js';
import { databaseWithToken, runIn, serveIn } from '../helpers/cli.js';
import { freePort } from '../helpers/ports.js';
import { storedPlant } from '../helpers/stored-plant.js';
import { eventually } from '../helpers/sleep.js';

const BAD: { env: Record<string, string>; names: string[]; hint?: RegExp }[] = [
  { env: { PORT: 'abc' }, names: ['PORT'], hint: /whole number/ },
  { env: { PORT: '70000' }, names: ['PORT'], hint: /0 to 65535/ },
  { env: { PORT: '-1' }, names: ['PORT'] },
  { env: { PORT: '80.5' }, names: ['PORT'] },
  { env: { HOST: 'not a host!' }, names: ['HOST'] },
  { env: { WORKERS: '0' }, names: ['WORKERS'], hint: /1 to 1024/ },
  { env: { WORKERS: 'all' }, names: ['WORKERS'], hint: /whole number/ },
  { env: { LOG_LEVEL: 'loud' }, names: ['LOG_LEVEL'], hint: /fatal, error, warn, info, debug, trace, silent/ },
  { env: { BODY_LIMIT_BYTES: 'lots' }, names: ['BODY_LIMIT_BYTES'] },
  { env: { BODY_LIMIT_BYTES: '10' }, names: ['BODY_LIMIT_BYTES'] },
  { env: { REQUEST_TIMEOUT_MS: '5' }, names: ['REQUEST_TIMEOUT_MS'] },
  { env: { HEADERS_TIMEOUT_MS: '1e3' }, names: ['HEADERS_TIMEOUT_MS'] },
  { env: { SHUTDOWN_TIMEOUT_MS: 'soon' }, names: ['SHUTDOWN_TIMEOUT_MS'] },
  { env: { TOKEN_CACHE_TTL_MS: '60000' }, names: ['TOKEN_CACHE_TTL_MS'] },
  { env: { BOOTSTRAP_TOKEN: 'maybe' }, names: ['BOOTSTRAP_TOKEN'] },
  { env: { DATABASE_URL: 'mysql://admin:hunter2@db.example/plants' }, names: ['DATABASE_URL'], hint: /sqlite:/ },
  { env: { DATABASE_URL: 'plants.db' }, names: ['DATABASE_URL'] },
  { env: { PORT: 'x', LOG_LEVEL: 'y', BODY_LIMIT_BYTES: 'z' }, names: ['PORT', 'LOG_LEVEL', 'BODY_LIMIT_BYTES'] },
];

test('a bad setting stops serve with exit 1 and a message naming the variable (every bad one), before anything is created', async (t) => {
  const dir = tempDir(t);
  const results = await Promise.all(
    BAD.map(async (c) => ({ c, r: await runIn(dir, ['serve'], { DATABASE_URL: `sqlite:${join(dir, 'db', 'x.db')}`, ...c.env }, 10_000) })),
  );
  for (const { c, r } of results) {
    const what = JSON.stringify(c.env);
    assert.equal(r.signal, null, `${what}: serve started anyway`);
    assert.equal(r.code, 1, `${what}: ${r.stderr}`);
    for (const name of c.names) assert.match(r.stderr, new RegExp(`^\\s*${name}: `, 'm'), `${what}: ${r.stderr}`);
    if (c.hint) assert.match(r.stderr, c.hint, what);
    assert.doesNotMatch(r.stderr, /\n\s+at /, `${what}: stack trace`);
    assert.doesNotMatch(r.stdout, /Server listening/, what);
  }
  const mysql = results.find(({ c }) => c.env.DATABASE_URL?.startsWith('mysql'))!;
  assert.ok(!mysql.r.stderr.includes('hunter2'), `the password was printed: ${mysql.r.stderr}`);
  assert.equal(existsSync(join(dir, 'db')), false, 'a rejected configuration created the database');
  assert.equal(existsSync(join(dir, 'data')), false);
});

test('plant-store config prints every setting as VARIABLE=value with the defaults', async (t) => {
  const r = await runIn(tempDir(t), ['config']);
  assert.equal(r.code, 0, r.stderr);
  const lines = r.stdout.trim().split('\n');
  for (const l of lines) assert.match(l, /^[A-Z][A-Z0-9_]*=.*$/);
  const values = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
  assert.deepEqual(
    {
      PORT: values.PORT,
      HOST: values.HOST,
      DATABASE_URL: values.DATABASE_URL,
      LOG_LEVEL: values.LOG_LEVEL,
      BODY_LIMIT_BYTES: values.BODY_LIMIT_BYTES,
    },
    { PORT: '8080', HOST: '127.0.0.1', DATABASE_URL: 'sqlite:./data/plant-store.db', LOG_LEVEL: 'info', BODY_LIMIT_BYTES: '1048576' },
  );
  for (const name of ['REQUEST_TIMEOUT_MS', 'HEADERS_TIMEOUT_MS', 'SHUTDOWN_TIMEOUT_MS']) assert.match(values[name] ?? '', /^\d+$/, name);
});

test('plant-store config shows the values from the environment, normalised, and masks a password in DATABASE_URL', async (t) => {
  const r = await runIn(tempDir(t), ['config'], {
    PORT: '9999',
    LOG_LEVEL: 'DEBUG',
    BODY_LIMIT_BYTES: '2048',
    DATABASE_URL: 'sqlite://admin:hunter2@localhost/plants.db',
  });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^PORT=9999$/m);
  assert.match(r.stdout, /^LOG_LEVEL=debug$/m);
  assert.match(r.stdout, /^BODY_LIMIT_BYTES=2048$/m);
  assert.match(r.stdout, /^DATABASE_URL=sqlite:\/\/admin:\*\*\*\*@localhost\/plants\.db$/m);
  assert.ok(!r.stdout.includes('hunter2') && !r.stderr.includes('hunter2'), 'the password was printed');
});

test('bad PostgreSQL settings stop serve with exit 1 naming each variable, never printing the password', async (t) => {
  const dir = tempDir(t);
  const cases = [
    { env: { DATABASE_URL: 'postgres://admin:hunter2@/plants' }, names: ['DATABASE_URL'] },
    { env: { DATABASE_POOL_SIZE: '0', DATABASE_STATEMENT_TIMEOUT_MS: '10s', DATABASE_CONNECT_TIMEOUT_MS: '-1' }, names: ['DATABASE_POOL_SIZE', 'DATABASE_STATEMENT_TIMEOUT_MS', 'DATABASE_CONNECT_TIMEOUT_MS'] },
  ];
  for (const c of cases) {
    const r = await runIn(dir, ['serve'], { DATABASE_URL: `sqlite:${join(dir, 'db', 'x.db')}`, ...c.env }, 20_000);
    assert.equal(r.code, 1, `${JSON.stringify(c.env)}: ${r.stderr}`);
    for (const name of c.names) assert.match(r.stderr, new RegExp(`^\\s*${name}: `, 'm'), r.stderr);
    assert.ok(!r.stderr.includes('hunter2'), r.stderr);
  }
  assert.match((await runIn(dir, ['serve'], cases[0]!.env, 20_000)).stderr, /postgres:\/\/USER:PASSWORD@HOST/);
});

test('plant-store config accepts postgres:// and postgresql:// URLs and masks their password, also in a password= parameter', async (t) => {
  for (const [url, shown] of [
    ['postgres://admin:hunter2@db.example:5432/plants', 'postgres://admin:****@db.example:5432/plants'],
    ['postgresql://admin:hunter2@db.example/plants?sslmode=require', 'postgresql://admin:****@db.example/plants?sslmode=require'],
    ['postgres://db.example/plants?user=admin&password=hunter2', 'postgres://db.example/plants?user=admin&password=****'],
  ]) {
    const r = await runIn(tempDir(t), ['config'], { DATABASE_URL: url, DATABASE_POOL_SIZE: '25' });
    assert.equal(r.code, 0, r.stderr);
    assert.ok(r.stdout.includes(`\nDATABASE_URL=${shown}\n`), r.stdout);
    assert.match(r.stdout, /^DATABASE_POOL_SIZE=25$/m);
    assert.ok(!r.stdout.includes('hunter2') && !r.stderr.includes('hunter2'), 'the password was printed');
  }
});

test('plant-store config with a bad value exits 1 naming it', async (t) => {
  const r = await runIn(tempDir(t), ['config'], { PORT: 'eighty' });
  assert.equal(r.code, 1);
  assert.match(r.stderr, /PORT: .*eighty/);
});

test('without DATABASE_URL the store is ./data/plant-store.db under the working directory, created on first start', async (t) => {
  const dir = tempDir(t);
  const server = await serveIn(t, dir, { BOOTSTRAP_TOKEN: 'true' });
  const file = join(dir, 'data', 'plant-store.db');
  assert.ok(existsSync(file), 'data/plant-store.db was not created in the working directory');
  // The first start prints a token for the new store (after it announces the address); it works against it.
  const token = await eventually(() => /^\s+(pst_\S+)\s*$/m.exec(server.stdout())?.[1], () => `no bootstrap token printed:\n${server.stdout()}`);
  const res = await fetch(`${server.url}/plants`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: '{"id":31,"name":"default place"}',
  });
  assert.equal(res.status, 200);
  server.proc.kill('SIGTERM');
  assert.equal(await server.exited, 0);

  const { store } = await openStore(`sqlite:${file}`);
  t.after(() => store.close());
  assert.deepEqual(await storedPlant(store, 31n), { id: 31n, name: 'default place' });
});

test('migrate without DATABASE_URL creates ./data/plant-store.db under the working directory', async (t) => {
  const dir = tempDir(t);
  const r = await runIn(dir, ['migrate']);
  assert.equal(r.code, 0, r.stderr);
  assert.ok(existsSync(join(dir, 'data', 'plant-store.db')));
});

test('PORT, HOST and BODY_LIMIT_BYTES from the environment take effect', async (t) => {
  const port = await freePort();
  const { databaseUrl, token } = await databaseWithToken(t);
  const server = await serveIn(t, tempDir(t), { DATABASE_URL: databaseUrl, PORT: String(port), HOST: '127.0.0.1', BODY_LIMIT_BYTES: '100', BOOTSTRAP_TOKEN: 'false' });
  assert.equal(server.url, `http://127.0.0.1:${port}`);
  const post = (body: string) =>
    fetch(`${server.url}/plants`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body });
  const small = await post('{"id":1,"name":"small"}');
  assert.equal(small.status, 200);
  const large = await post(JSON.stringify({ id: 2, name: 'x'.repeat(120) }));
  assert.equal(large.status, 413);
  assert.match((await errorOf(large)).message, /100 bytes/);
});

test('a PORT that is already taken stops serve with exit 1 and a message naming the address', async (t) => {
  const busy = createServer();
  await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', () => resolve()));
  t.after(() => busy.close());
  const port = (busy.address() as { port: number }).port;
  const dir = tempDir(t);
  const r = await runIn(dir, ['serve'], { DATABASE_URL: `sqlite:${join(dir, 'x.db')}`, PORT: String(port), BOOTSTRAP_TOKEN: 'false' }, 10_000);
  assert.equal(r.signal, null, 'serve kept running');
  assert.equal(r.code, 1);
  assert.match(r.stderr, new RegExp(`EADDRINUSE.*127\\.0\\.0\\.1:${port}`));
});

test('a PORT already in use is reported before a first token is made: nothing printed, no token stored', async (t) => {
  const busy = createServer();
  await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', () => resolve()));
  t.after(() => busy.close());
  const port = (busy.address() as { port: number }).port;
  const dir = tempDir(t);
  const file = join(dir, 'x.db');
  const r = await runIn(dir, ['serve'], { DATABASE_URL: `sqlite:${file}`, PORT: String(port), BOOTSTRAP_TOKEN: 'true' }, 10_000);
  assert.equal(r.code, 1, r.stderr);
  assert.match(r.stderr, new RegExp(`EADDRINUSE.*127\\.0\\.0\\.1:${port}`));
  assert.doesNotMatch(r.stdout, /pst_|No API token existed/);
  const { store } = await openStore(`sqlite:${file}`);
  t.after(() => store.close());
  assert.equal(await store.countTokens(), 0, 'a token was created for a server that never listened');
});
