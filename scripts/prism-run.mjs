#!/usr/bin/env node
// Run by hand, not by CI: an independent validating proxy (Stoplight Prism) in front of the service, and every
// operation of openapi/plant-store.yaml driven through it, its main statuses included (200/201/202/204/304 and
// 400, 401, 403, 404, 405, 409, 412, 413, 415, 417, 428, 429, 503 where a request can make them). Prism
// checks each request and each answer against the document and reports what departs in the `sl-violations`
// header; this prints every violation and sorts it:
//   expected    a request violation on a request that is bad on purpose (the service refuses it too);
//   int64       Prism's own limits: it reads int64 as a JavaScript number, so it holds `format: int64` to
//               +-(2^53 - 1) and rounds larger ids in bodies, though the document keeps them exact;
//   yaml        Prism's own limit too: it holds a YAML answer's text to a schema that describes the data the
//               text holds (GET /openapi.yaml, `type: object`); counted so only when the text parses into it;
//   finding     anything else: the document or the service is wrong. Exit 1 when there is one, or when a
//               request is not answered with the status the case expects.
//
//   npm run build                        (the PostgreSQL cluster comes from dist/test/helpers/pg-cluster.js)
//   mkdir /tmp/prism && (cd /tmp/prism && npm init -y && npm i @stoplight/prism-cli)
//   node scripts/prism-run.mjs --prism /tmp/prism/node_modules/.bin/prism [--stores sqlite,postgres] [--verbose]
//
// PRISM may name the executable instead of --prism. Prism runs without `--errors`: with it, Prism answers a
// request it finds invalid itself (401, 422) instead of forwarding it, and the service's own answer to a bad
// request would go unchecked. Without it every request reaches the service and every violation, of the
// request or of the answer, is still reported in `sl-violations`.
//
// Its parts are in scripts/prism/: processes.mjs (the processes it starts, one request), harness.mjs (the
// service behind Prism, one case, its violations sorted), passes.mjs (the requests) and report.mjs (the summary).
import { mkdtempSync, existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { settings } from './prism/harness.mjs';
import { limitsPass, mainPass } from './prism/passes.mjs';
import { cleanup, cleanups } from './prism/processes.mjs';
import { report } from './prism/report.mjs';

const { values: opts } = parseArgs({
  options: {
    prism: { type: 'string', default: process.env.PRISM },
    stores: { type: 'string', default: 'sqlite,postgres' },
    verbose: { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h' },
  },
});
if (opts.help || !opts.prism) {
  process.stderr.write('node scripts/prism-run.mjs --prism PATH_TO_PRISM [--stores sqlite,postgres] [--verbose]   (or PRISM=PATH)\n');
  process.exit(opts.help ? 0 : 2);
}
if (!existsSync(opts.prism)) {
  process.stderr.write(`no Prism at ${opts.prism}\n`);
  process.exit(2);
}

settings.prism = opts.prism;
settings.verbose = opts.verbose;

process.on('SIGINT', () => cleanup().then(() => process.exit(130)));

async function databaseFor(store) {
  if (store === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'plant-store-prism-'));
    cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
    let n = 0;
    return async () => `sqlite:${join(dir, `p${++n}.db`)}`;
  }
  const { startPgCluster } = await import(new URL('../dist/test/helpers/pg-cluster.js', import.meta.url).href);
  const cluster = await startPgCluster();
  cleanups.push(() => cluster.destroy());
  const pg = (await import('pg')).default;
  let n = 0;
  return async () => {
    const name = `prism_${++n}`;
    const client = new pg.Client({ connectionString: cluster.url });
    await client.connect();
    await client.query(`CREATE DATABASE ${name}`);
    await client.end();
    const u = new URL(cluster.url);
    u.pathname = `/${name}`;
    return u.toString();
  };
}

try {
  for (const store of opts.stores.split(',').map((s) => s.trim()).filter(Boolean)) {
    const fresh = await databaseFor(store);
    await mainPass(store, await fresh());
    await limitsPass(store, await fresh());
  }
} finally {
  await cleanup();
}

process.exit(report(opts.stores));
