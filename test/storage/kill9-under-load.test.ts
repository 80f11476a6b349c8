// kill -9 in the middle of concurrent writes: every plant that was answered 200 is in the file afterwards,
// and nothing is there that no client sent. The server starts again on the same file.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { errorOf, spawnServer } from '../helpers/app.js';
import { plantJson, postRaw } from '../helpers/raw-request.js';
import { eventually } from '../helpers/sleep.js';
import { assertAcknowledgedStored, runLoad, summarize, type LoadResult } from '../helpers/load.js';
import { databaseWithToken, portOf } from '../helpers/cli.js';

const CLIENTS = 50;
const MIN_ACKNOWLEDGED = 300;
// Ids above 2^53, so that exactness is part of what must survive.
const FIRST_ID = 2n ** 60n;

test('kill -9 under 50 concurrent writers loses no acknowledged plant', async (t) => {
  const { databaseUrl, token } = await databaseWithToken(t);
  const env = { DATABASE_URL: databaseUrl, BOOTSTRAP_TOKEN: 'false' };
  const server = await spawnServer(t, env);

  let killed = false;
  const live: LoadResult = { ok: new Map(), statuses: new Map(), errors: new Map(), sent: 0 };
  const load = runLoad({
    port: portOf(server.url),
    token,
    clients: CLIENTS,
    firstId: FIRST_ID,
    until: () => false,
    stopOnError: () => killed,
    result: live,
  });
  // Until enough writes were acknowledged to mean something (on a loaded machine that takes longer).
  await eventually(() => live.ok.size >= MIN_ACKNOWLEDGED, 'writes acknowledged', 20_000, 100).catch(() => {}); // the assertions below judge the load
  killed = true;
  server.proc.kill('SIGKILL');
  assert.equal(await server.exited, 'SIGKILL');
  const result = await load;
  t.diagnostic(summarize(result));

  // Before the kill nothing failed: the only non-200 outcomes are connections cut by the kill.
  assert.deepEqual([...result.statuses.keys()], [], `unexpected statuses: ${summarize(result)}`);
  assert.ok(result.ok.size >= 200, `too little load to mean anything: ${summarize(result)}`);
  t.diagnostic(await assertAcknowledgedStored(databaseUrl, result));

  // The server starts again on the file the kill left behind and still knows the plants.
  const again = await spawnServer(t, env);
  const port = portOf(again.url);
  const someId = [...result.ok.keys()].at(-1)!;
  const replay = await postRaw(port, token, plantJson(someId, `plant-${someId}`));
  assert.equal(replay.kind === 'response' && replay.status, 200);
  const conflict = await fetch(`${again.url}/plants`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: plantJson(someId, 'another name'),
  });
  assert.equal(conflict.status, 409);
  await errorOf(conflict);
  again.proc.kill('SIGTERM');
  assert.equal(await again.exited, 0);
});
