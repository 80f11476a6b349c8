// The /docs page's plugins load on its first request (src/docs/docs-handlers.ts): the routes the service
// registers at start must be the plugin's own, and the page must answer alike whichever request comes first.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Fastify, { type FastifyInstance } from 'fastify';
import { registerDocsPage } from '../../src/docs/docs-handlers.js';
import { registerPagePlugins } from '../../src/docs/docs-page.js';
import { loadBuiltContract, loadContract } from '../../src/http/contract.js';
import { startApp } from '../helpers/app.js';

/** Every route `register` adds, as Fastify's onRoute hook sees it: method, URL, schema, a route error handler. */
async function routesOf(register: (app: FastifyInstance) => Promise<void>): Promise<string[]> {
  const app = Fastify();
  const routes: string[] = [];
  app.addHook('onRoute', (route) => {
    routes.push(`${[route.method].flat().join(',')} ${route.url} ${JSON.stringify(route.schema)} ${route.errorHandler ? 'own error handler' : ''}`);
  });
  await register(app);
  await app.ready();
  await app.close();
  return routes;
}

test("the service registers at start the /docs page's routes as the plugins register them", async () => {
  const built = await loadBuiltContract();
  const contract = 'stale' in built ? loadContract() : built.contract;
  const plugins = await routesOf((app) => registerPagePlugins(app, contract));
  const service = await routesOf((app) => registerDocsPage(app, contract));
  assert.ok(plugins.length >= 8, plugins.join('\n'));
  assert.deepEqual(service, plugins);
});

test('whichever request to the page comes first, and several at once, each gets its answer with the page policy', async (t) => {
  const s = await startApp(t);
  const paths = ['/docs/static/swagger-ui.css', '/docs/static/swagger-ui-bundle.js', '/docs/json', '/docs/static/theme/favicon.svg', '/docs/static/no-such-asset.js', '/docs'];
  const answers = await Promise.all(paths.map(async (path) => {
    const res = await fetch(`${s.url}${path}`);
    return { path, status: res.status, csp: res.headers.get('content-security-policy'), body: await res.text() };
  }));
  const page = answers.at(-1)!;
  assert.deepEqual(answers.map((a) => [a.path, a.status]), paths.map((p) => [p, p.includes('no-such') ? 404 : 200]));
  for (const a of answers.filter((x) => x.status === 200)) {
    assert.equal(a.csp, page.csp, `${a.path}: the page's policy`);
    assert.ok(a.body.length > 0, a.path);
  }
  assert.match(page.csp ?? '', /script-src 'self'/);
  assert.equal(answers[2]!.body, await (await fetch(`${s.url}/openapi.json`)).text(), '/docs/json is the document');
});
