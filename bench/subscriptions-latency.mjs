// Write latency with N webhook subscriptions whose receiver never answers (so each fills up with pending
// deliveries): POST, PUT and DELETE one after another, in one process with the service (client and server share
// the event loop, so compare runs of this script with each other, not with wrk figures). Usage, after
// `npm run build`: ../node_modules/.bin/node subscriptions-latency.mjs 1, then ... 1000, alternating a few times
// (this machine drifts).
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore } from '../dist/src/storage/open-store.js';
import { buildApp } from '../dist/src/app.js';
import { createBackground } from '../dist/src/background.js';
import { createObservers } from '../dist/src/observations.js';
import { createTokenService } from '../dist/src/auth/token-service.js';
import { createLogger } from '../dist/src/logger.js';
import { loadConfig } from '../dist/src/config.js';
const subsN = Number(process.argv[2] ?? 1);
const dir = mkdtempSync(join(tmpdir(), 'bench-subscriptions-'));
const rx = createServer(() => {}); await new Promise((r) => rx.listen(0, '127.0.0.1', r));
const url = `sqlite:${join(dir, 'store.db')}`;
const config = loadConfig({}, { port: 0, logLevel: 'silent', databaseUrl: url, bootstrapToken: false, webhookAllowedHosts: ['127.0.0.1'], webhookMaxSubscriptions: 1000, webhookTimeoutMs: 600000 });
const { store } = await openStore(url);
for (let i = 0; i < subsN; i++) await store.webhooks.insertSubscription({ id: 'wh_' + String(i).padStart(4, '0'), url: `http://127.0.0.1:${rx.address().port}/a${i}`, description: null, events: ['newPlant','plantUpdated','plantDeleted'], format: 'plain', secret: 'whsec_dGVzdHRlc3R0ZXN0dGVzdHRlc3Q=', createdAt: new Date(), disabledAt: null, disabledReason: null }, () => undefined);
const logger = createLogger(config);
const observers = createObservers();
const tokens = createTokenService(store, { cacheTtlMs: config.tokenCacheTtlMs });
const background = createBackground({ config, store, logger, observers, tokens });
const app = await buildApp(config, { store, logger, tokens, services: background.links, observers });
await app.listen({ port: 0, host: '127.0.0.1' });
background.start();
const tok = (await app.tokens.create({ name: 'x', scopes: ['plants:write'] })).secret;
const base = `http://127.0.0.1:${app.server.address().port}`;
const h = { authorization: 'Bearer ' + tok, 'content-type': 'application/json' };
const call = (method, path, body) => fetch(base + path, { method, headers: body ? h : { authorization: h.authorization }, body }).then((r) => r.text());
// Saturate: 70 writes, then let the passes fill every subscription.
for (let i = 0; i < 70; i++) await call('POST', '/plants', `{"id":${1e6 + i},"name":"w"}`);
for (let i = 0; i < 60; i++) await background.sequencer.runOnce();
const lat = { POST: [], PUT: [], DELETE: [] };
for (let i = 0; i < 600; i++) {
  for (const [m, path, body] of [['POST', '/plants', `{"id":${i},"name":"p"}`], ['PUT', `/plants/${i}`, '{"name":"q"}'], ['DELETE', `/plants/${i}`]]) {
    const t0 = performance.now(); await call(m, path, body); lat[m].push(performance.now() - t0);
  }
}
const p = (a, q) => a.sort((x, y) => x - y)[Math.floor(a.length * q)].toFixed(2);
console.log(`${subsN} subscriptions:`, Object.entries(lat).map(([m, a]) => `${m} p50 ${p(a, 0.5)} p99 ${p(a, 0.99)} ms`).join(', '), '| pending', await store.webhooks.countPendingDeliveries());
await app.close();
await background.stop();
await store.close();
rx.close();
rmSync(dir, { recursive: true, force: true });
