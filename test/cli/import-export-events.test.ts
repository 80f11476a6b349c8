// `plant-store import` and webhooks: new plants get a newPlant event for each active subscription, identical
// ones none.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { runCli } from '../helpers/app.js';
import { openStore } from '../../src/storage/open-store.js';
import { sequenced } from '../helpers/events.js';
import { withoutVersion } from '../helpers/webhooks.js';
import { file, MAX, setup } from './import-export-support.js';

test('new plants get a newPlant event for each active subscription; identical ones do not', async (t) => {
  // Reads the outbox tables from the SQLite file directly: stays on SQLite.
  const { dir, env } = await setup(t, true);
  const { store } = await openStore(env.DATABASE_URL!);
  await store.webhooks.insertSubscription(
    {
      id: 'wh_test', url: 'https://example.com/hook', description: null, events: ['newPlant'], format: 'plain', secret: 'whsec_dGVzdHRlc3R0ZXN0dGVzdHRlc3Q=',
      createdAt: new Date(), disabledAt: null, disabledReason: null,
    },
    () => undefined,
  );
  await store.close();
  const path = file(dir, 'p.jsonl', `{"id":${MAX},"name":"a"}\n{"id":2,"name":"b","tag":"x"}\n`);
  assert.equal((await runCli(['import', path], env)).code, 0);
  assert.equal((await runCli(['import', path], env)).code, 0);
  // The deliveries are made by the next sequencing pass (the next serve's first).
  const reopened = await openStore(env.DATABASE_URL!);
  assert.equal(await sequenced(reopened.store), 2);
  await reopened.store.close();
  const db = new Database(env.DATABASE_URL!.slice('sqlite:'.length), { readonly: true });
  t.after(() => db.close());
  const payloads = db.prepare('SELECT payload FROM webhook_events ORDER BY payload').pluck().all();
  assert.deepEqual((payloads as string[]).map(withoutVersion), ['{"id":2,"name":"b","tag":"x"}', `{"id":${MAX},"name":"a"}`]);
  assert.equal(db.prepare("SELECT count(*) FROM webhook_deliveries WHERE subscription_id = 'wh_test' AND status = 'pending'").pluck().get(), 2);
});
