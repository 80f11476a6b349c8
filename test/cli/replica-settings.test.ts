// REPLICA_URL from the operator's side, before anything replicates: what the settings accept and refuse (a
// PostgreSQL store among them, pointed to its own way), how the URL is printed, and the replica commands' usage.
// The replication itself: test/ops/replication.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '../helpers/app.js';
import { runIn } from '../helpers/cli.js';

test('REPLICA_URL on a PostgreSQL store stops serve at start, pointing to the standby setup', async (t) => {
  const dir = tempDir(t);
  const r = await runIn(dir, ['serve'], { DATABASE_URL: 'postgres://u:secret@127.0.0.1:1/db', REPLICA_URL: `file://${dir}/replica`, PORT: '0' });
  assert.equal(r.code, 1, r.stderr);
  assert.match(r.stderr, /REPLICA_URL: replication with Litestream is for the SQLite store; on PostgreSQL run a synchronous standby instead \(docs\/deployment\.md, PostgreSQL\)/);
  assert.doesNotMatch(r.stderr, /secret/);
  assert.doesNotMatch(r.stdout, /listening/);
});

test('REPLICA_URL: each refused entry is named with why; a password is masked wherever the URL is printed', async (t) => {
  const dir = tempDir(t);
  const refused: [string, RegExp][] = [
    ['ftp://host/x', /unsupported scheme ftp: \(use file:, s3: or sftp:\)/],
    ['file://relative/x', /a file replica is a folder given by its absolute path/],
    ['s3://key:hunter2@bucket/x', /no credentials in the URL; set AWS_ACCESS_KEY_ID/],
    ['s3://bucket/x?acl=public', /unknown option acl \(s3 replicas take endpoint, region, force-path-style, skip-verify\)/],
    ['sftp://backup@vault/x', /give a key \(\?key-path=\/path\/to\/key\) or a password/],
    ['not a url', /is not a URL/],
  ];
  for (const [url, why] of refused) {
    const r = await runIn(dir, ['config'], { REPLICA_URL: `file:///srv/ok,${url}` });
    assert.equal(r.code, 1, `${url}: ${r.stdout}`);
    assert.match(r.stderr, why, url);
    assert.doesNotMatch(r.stderr, /hunter2/);
  }
  const r = await runIn(dir, ['config'], { REPLICA_URL: 'sftp://backup:hunter2@vault:2222/srv/r,s3://bucket/p?endpoint=https://s3.example&force-path-style=true', REPLICA_SYNC_INTERVAL: '500ms' });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^REPLICA_URL=sftp:\/\/backup:\*\*\*\*@vault:2222\/srv\/r,s3:\/\/bucket\/p\?endpoint=https:\/\/s3\.example&force-path-style=true$/m);
  assert.match(r.stdout, /^REPLICA_SYNC_INTERVAL=500ms$/m);
  assert.doesNotMatch(r.stdout, /hunter2/);
  const slow = await runIn(dir, ['config'], { REPLICA_SYNC_INTERVAL: '61m' });
  assert.equal(slow.code, 1);
  assert.match(slow.stderr, /REPLICA_SYNC_INTERVAL: expected between 100ms and 60m, got "61m"/);
  const unit = await runIn(dir, ['config'], { REPLICA_SYNC_INTERVAL: '1h' });
  assert.match(unit.stderr, /REPLICA_SYNC_INTERVAL: expected a number and a unit \(ms, s or m\), such as 1s or 500ms, got "1h"/);
});

test('replica commands: status needs REPLICA_URL; restore takes a FILE or --from-replica, and --at only with --from-replica', async (t) => {
  const dir = tempDir(t);
  const none = await runIn(dir, ['replica', 'status'], {});
  assert.equal(none.code, 1);
  assert.match(none.stderr, /REPLICA_URL is not set: there is no replica to report on/);
  const both = await runIn(dir, ['restore', 'backup.db', '--from-replica'], { REPLICA_URL: `file://${dir}/r` });
  assert.equal(both.code, 2);
  assert.match(both.stderr, /--from-replica restores from REPLICA_URL: give no FILE/);
  const at = await runIn(dir, ['restore', 'backup.db', '--at', '2026-11-28T09:30:00Z'], {});
  assert.equal(at.code, 2);
  assert.match(at.stderr, /--at is for --from-replica/);
  const badAt = await runIn(dir, ['restore', '--from-replica', '--at', 'yesterday'], { REPLICA_URL: `file://${dir}/r` });
  assert.equal(badAt.code, 2);
  assert.match(badAt.stderr, /--at takes an RFC 3339 time with its offset/);
  // A value that starts with a dash is taken as an option by the parser: the message says how to give it.
  const dashed = await runIn(dir, ['restore', '--from-replica', '--at', '-1'], { REPLICA_URL: `file://${dir}/r` });
  assert.equal(dashed.code, 2);
  assert.match(dashed.stderr, /Option --at needs a value; one that starts with "-" is given as --at=VALUE\./);
  const joined = await runIn(dir, ['restore', '--from-replica', '--at=-1'], { REPLICA_URL: `file://${dir}/r` });
  assert.equal(joined.code, 2);
  assert.match(joined.stderr, /--at takes an RFC 3339 time with its offset, .*\(got "-1"\)/);
  const help = await runIn(dir, ['--help'], {});
  assert.match(help.stdout, /^ {2}replica {5}The Litestream replicas of REPLICA_URL/m);
  assert.match(help.stdout, /--from-replica \[--at TIME\]/);
});

test('a refused restore --from-replica leaves nothing it made: not the folders it created for the store', async (t) => {
  const dir = tempDir(t);
  const env = { DATABASE_URL: `sqlite:${join(dir, 'new', 'data', 'plant-store.db')}`, REPLICA_URL: `file://${join(dir, 'empty-replica')}` };
  for (const args of [['restore', '--from-replica'], ['restore', '--from-replica', '--at', '2026-11-28T09:30:00Z']]) {
    const refused = await runIn(dir, args, env);
    assert.equal(refused.code, 1, refused.stderr);
    assert.match(refused.stderr, /Could not restore from the replicas|hold no copy of the store/);
    assert.deepEqual(readdirSync(dir).sort(), [], `${args.join(' ')} left ${readdirSync(dir).join(', ')}`);
  }
});
