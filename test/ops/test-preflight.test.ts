// `npm test` on a machine without the system packages the tests need, where they cannot be installed (no
// apt-get on PATH): scripts/test.mjs stops before building anything, with exit 1 and one line naming exactly
// the packages the chosen run needs and the command that installs them. The packages are looked for under an
// empty folder (PLANT_STORE_TEST_SYSTEM_ROOT) and an empty PATH, as on a fresh machine.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { tempDir } from '../helpers/app.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

function npmTestOnBareMachine(t: TestContext, stores: string | undefined, files: string[] = []) {
  const bare = tempDir(t);
  mkdirSync(join(bare, 'bin'));
  const env: Record<string, string> = { PATH: join(bare, 'bin'), PLANT_STORE_TEST_SYSTEM_ROOT: bare };
  if (stores !== undefined) env.PLANT_STORE_TEST_STORES = stores;
  const r = spawnSync(process.execPath, ['scripts/test.mjs', ...files], { cwd: ROOT, env, encoding: 'utf8', timeout: 30_000 });
  return { status: r.status, stdout: r.stdout, stderrLines: r.stderr.split('\n').filter((l) => l !== '') };
}

const line = (packages: string) =>
  `npm test needs system packages that are missing: ${packages.replaceAll(' ', ', ')} (no apt-get on PATH). ` +
  `As root: apt-get update && apt-get install -y ${packages}`;
const SQLITE_HINT = '; or PLANT_STORE_TEST_STORES=sqlite to leave PostgreSQL out';

test('the whole suite on both stores names chromium, postgresql, haproxy and openssh-server in one line and runs nothing', (t) => {
  const r = npmTestOnBareMachine(t, undefined);
  assert.deepEqual(r.stderrLines, [line('chromium postgresql haproxy openssh-server') + SQLITE_HINT]);
  assert.equal(r.stdout, '', 'nothing was built or run');
  assert.equal(r.status, 1);
});

test('on SQLite only, PostgreSQL and HAProxy (whose tests need PostgreSQL) are not asked for', (t) => {
  const r = npmTestOnBareMachine(t, 'sqlite');
  assert.deepEqual(r.stderrLines, [line('chromium openssh-server')]);
  assert.equal(r.stdout, '');
  assert.equal(r.status, 1);
});

test('chosen test files ask only for what they use', (t) => {
  const plants = npmTestOnBareMachine(t, 'sqlite,postgres', ['test/plants/create-plant.test.ts']);
  assert.deepEqual(plants.stderrLines, [line('postgresql') + SQLITE_HINT]);
  assert.equal(plants.status, 1);

  const scale = npmTestOnBareMachine(t, 'postgres', ['test/scale/scale-out.test.ts', 'test/docs/docs-browser.test.ts']);
  assert.deepEqual(scale.stderrLines, [line('chromium postgresql haproxy') + SQLITE_HINT]);
  assert.equal(scale.status, 1);

  // The SFTP replica's server, for the SQLite-only replication test; on PostgreSQL that file does not run.
  const replication = npmTestOnBareMachine(t, 'sqlite', ['test/ops/replication.test.ts']);
  assert.deepEqual(replication.stderrLines, [line('openssh-server')]);
  const notThere = npmTestOnBareMachine(t, 'postgres', ['test/ops/replication.test.ts']);
  assert.deepEqual(notThere.stderrLines, [line('postgresql') + SQLITE_HINT]);
});
