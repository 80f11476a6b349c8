// The contract as served: /openapi.json and /openapi.yaml are the repository's document, and /docs is an
// interactive page whose every asset the service serves itself (no CDN, no other origin).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import YAML from 'yaml';
import { startApp } from '../helpers/app.js';
import { parseExact } from '../helpers/exact-json.js';

const REPO_DOCUMENT = YAML.parse(readFileSync(fileURLToPath(new URL('../../../openapi/plant-store.yaml', import.meta.url)), 'utf8'));

type Doc = Record<string, any>;

function deref(doc: Doc, node: any): any {
  while (node && typeof node.$ref === 'string') {
    node = node.$ref.slice(2).split('/').reduce((n: any, k: string) => n?.[k], doc);
  }
  return node;
}

test('GET /openapi.json is the repository document: OpenAPI 3.1, version 1.0.0, MIT, the schemas, bearer auth, and every POST /plants status with Error', async (t) => {
  const s = await startApp(t);
  // No token: the document is public.
  const res = await fetch(`${s.url}/openapi.json`);
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
  const doc = (await res.json()) as Doc;
  assert.deepEqual(doc, REPO_DOCUMENT);

  assert.match(doc.openapi, /^3\.1\.\d+$/);
  assert.equal(doc.info.version, '1.0.0');
  assert.equal(doc.info.license.name, 'MIT');
  for (const name of ['Plant', 'NewPlant', 'Error']) assert.ok(doc.components.schemas[name], `schema ${name}`);
  assert.deepEqual(doc.components.schemas.Error.required.sort(), ['error', 'message']);
  assert.equal(doc.components.securitySchemes.bearerAuth.type, 'http');
  assert.equal(doc.components.securitySchemes.bearerAuth.scheme, 'bearer');
  assert.deepEqual(doc.security, [{ bearerAuth: [] }]);

  const post = doc.paths['/plants'].post;
  assert.deepEqual(post.security, [{ bearerAuth: ['plants:write'] }]);
  const newPlant = deref(doc, post.requestBody.content['application/json'].schema);
  assert.equal(newPlant, doc.components.schemas.NewPlant);
  const statuses = Object.keys(post.responses);
  for (const status of ['200', '400', '401', '403', '409', '413', '415', '429', '500', '503']) {
    assert.ok(statuses.includes(status), `POST /plants declares ${status}`);
  }
  for (const status of statuses.filter((x) => x !== '200')) {
    const schema = deref(doc, post.responses[status]).content['application/json'].schema;
    assert.equal(deref(doc, schema), doc.components.schemas.Error, `${status} uses the Error schema`);
  }
  assert.equal(deref(doc, post.responses['200'].content['application/json'].schema), doc.components.schemas.Plant);
});

test('GET /openapi.json and /docs/json are the YAML document digit for digit: every integer, int64 examples included, exact', async (t) => {
  const s = await startApp(t);
  const yaml = readFileSync(fileURLToPath(new URL('../../../openapi/plant-store.yaml', import.meta.url)), 'utf8');
  const exact = YAML.parse(yaml, { intAsBigInt: true });
  for (const path of ['/openapi.json', '/docs/json']) {
    const text = await (await fetch(`${s.url}${path}`)).text();
    assert.deepEqual(parseExact(text), exact, path);
    assert.match(text, /"id":9223372036854775807\b/, `${path} keeps the largest id`);
  }
  const served = await (await fetch(`${s.url}/docs/yaml`)).text();
  assert.equal(served, yaml, '/docs/yaml is the repository file');
});

test('GET /openapi.yaml is the same document as YAML', async (t) => {
  const s = await startApp(t);
  const res = await fetch(`${s.url}/openapi.yaml`);
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /^(application|text)\/(x-)?yaml/);
  const text = await res.text();
  assert.doesNotMatch(text.trimStart(), /^\{/, 'YAML, not JSON');
  const json = await (await fetch(`${s.url}/openapi.json`)).json();
  assert.deepEqual(YAML.parse(text), json);
});

test('GET /docs is an HTML page whose scripts, styles and data all come from the service itself', async (t) => {
  const s = await startApp(t);
  const origin = new URL(s.url);
  const page = await fetch(`${s.url}/docs`);
  assert.equal(page.status, 200);
  assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
  const html = await page.text();
  const pageUrl = new URL(page.url);

  // The Plant Store's page: its title, and no Fastify logo written into the page.
  assert.match(html, /<title>Plant Store API<\/title>/);
  const foreign = (text: string) =>
    [...text.matchAll(/\bhttps?:\/\/[^\s"'`<>)]+/g)].map((m) => m[0]).filter((u) => new URL(u).host !== origin.host);
  assert.deepEqual(foreign(html), [], 'the page references another host');

  // Every asset the HTML names.
  const refs = [...html.matchAll(/\b(?:src|href)\s*=\s*["']([^"']+)["']/g)].map((m) => m[1]!);
  const scripts = [...html.matchAll(/<script[^>]*\bsrc\s*=\s*["']([^"']+)["']/g)].map((m) => new URL(m[1]!, pageUrl).href);
  const styles = [...html.matchAll(/<link[^>]*rel\s*=\s*["']stylesheet["'][^>]*href\s*=\s*["']([^"']+)["']/g)].map((m) => new URL(m[1]!, pageUrl).href);
  assert.ok(scripts.length >= 2, `scripts: ${scripts.join(' ')}`);
  assert.ok(styles.length >= 1, `styles: ${styles.join(' ')}`);
  assert.ok(!/<script(?![^>]*\bsrc)[^>]*>\s*\S/.test(html), 'no inline script');

  const fetched = new Map<string, { type: string; body: string }>();
  for (const ref of refs) {
    const url = new URL(ref, pageUrl);
    assert.equal(url.host, origin.host, `${ref} is on another host`);
    const res = await fetch(url);
    assert.equal(res.status, 200, `${url.pathname}`);
    const body = await res.text();
    assert.ok(body.length > 0, `${url.pathname} is empty`);
    fetched.set(url.href, { type: res.headers.get('content-type') ?? '', body });
  }
  for (const url of scripts) assert.match(fetched.get(url)!.type, /javascript/, url);
  for (const url of styles) {
    assert.match(fetched.get(url)!.type, /^text\/css/, url);
    const css = fetched.get(url)!.body;
    assert.deepEqual([...css.matchAll(/url\(\s*["']?(https?:[^"')]+)/g)].map((m) => m[1]).filter((u) => new URL(u!).host !== origin.host), [], `${url} loads from another host`);
    assert.doesNotMatch(css, /@import\s+(url\()?["']?https?:/, `${url} imports from another host`);
  }

  // The initializer (the small script that starts Swagger UI) names more of the service's own URLs.
  const initializerUrl = scripts.find((u) => /initializer/.test(u));
  assert.ok(initializerUrl, `an initializer script among ${scripts.join(' ')}`);
  const initializer = fetched.get(initializerUrl)!.body;
  // Comments load nothing (the stock initializer cites a web page in one); the code must name no other host.
  assert.doesNotMatch(initializer, /data:image\/svg\+xml;base64/, 'no logo in the initializer');
  const code = initializer.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
  assert.deepEqual(foreign(code), [], 'the initializer references another host');
  const base = pageUrl.href.endsWith('/') ? pageUrl.href : `${pageUrl.href}/`; // how the initializer resolves its URLs
  const named = [...initializer.matchAll(/["'](\.{0,2}\/[\w./-]+)["']/g)].map((m) => new URL(m[1]!, base).href);
  assert.ok(named.length >= 2, `initializer URLs: ${named.join(' ')}`);
  t.diagnostic(`fetched ${refs.length} assets named by the page and ${named.length} URLs named by the initializer: ${named.map((u) => new URL(u).pathname).join(' ')}`);
  for (const url of named) {
    const res = await fetch(url);
    assert.equal(res.status, 200, url);
    await res.arrayBuffer();
  }

  // The document the page shows is the service's document, byte for byte.
  const specUrl = /url:\s*resolveUrl\(['"]([^'"]+)['"]\)/.exec(initializer)?.[1];
  assert.ok(specUrl, 'the initializer names the document it shows');
  const shownText = await (await fetch(new URL(specUrl, base))).text();
  assert.equal(shownText, await (await fetch(`${s.url}/openapi.json`)).text());
  const shown = JSON.parse(shownText) as Doc;
  // "Try it out" sends to the service that served the page.
  assert.deepEqual(shown.servers.map((x: { url: string }) => new URL(x.url, pageUrl).origin), [origin.origin]);
});

test('the /docs page policy allows only the service itself and does not upgrade to https (the service speaks plain HTTP)', async (t) => {
  const s = await startApp(t);
  for (const path of ['/docs', '/docs/static/swagger-ui-bundle.js']) {
    const res = await fetch(`${s.url}${path}`);
    await res.arrayBuffer();
    const csp = res.headers.get('content-security-policy') ?? '';
    assert.match(csp, /default-src 'self'/, path);
    assert.match(csp, /script-src 'self'/, path);
    assert.doesNotMatch(csp, /upgrade-insecure-requests/, `${path}: browsers would fetch the page's assets over https, which this service does not serve`);
    for (const directive of csp.split(';').map((d) => d.trim()).filter(Boolean)) {
      const [name, ...sources] = directive.split(/\s+/);
      for (const src of sources) {
        assert.ok(src.startsWith("'") || src === 'data:', `${path}: ${name} allows ${src}`);
      }
    }
  }
});

test('the conditional headers carry no example, which the docs page would fill in (If-None-Match "42" answers 304 with no body)', () => {
  const parameters = REPO_DOCUMENT.components.parameters as Record<string, { name: string; example?: unknown; examples?: unknown; schema?: Doc }>;
  for (const name of ['IfMatch', 'IfNoneMatch']) {
    const { example, examples, schema } = parameters[name]!;
    assert.deepEqual([example, examples, schema?.example, schema?.examples, schema?.default], [undefined, undefined, undefined, undefined, undefined], name);
  }
});

test('the 400s the document quotes beside their parameters and bodies are what the service answers', async (t) => {
  const s = await startApp(t);
  const manage = (await s.tokens.create({ name: 'manage', scopes: ['webhooks:manage'] })).secret;
  const said = (text: string) => text.replace(/\s+/g, ' ');
  // Times differ from run to run: the document's example times stand for any.
  const anyTime = (text: string) => text.replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/g, 'TIME');
  const message = async (res: Response) => {
    assert.equal(res.status, 400);
    return ((await res.json()) as { message: string }).message;
  };
  const list = REPO_DOCUMENT.paths['/plants'].get;
  const afterName = deref(REPO_DOCUMENT, list.parameters.find((p: Doc) => deref(REPO_DOCUMENT, p).name === 'after_name'));
  const inIdOrder = await message(await fetch(`${s.url}/plants?after_name=Fern`, { headers: { authorization: `Bearer ${s.token.read}` } }));
  assert.ok(said(afterName.description).includes(inIdOrder), `after_name's description does not quote: ${inIdOrder}`);
  const aloneInNameOrder = await message(await fetch(`${s.url}/plants?sort=name&after_name=Fern`, { headers: { authorization: `Bearer ${s.token.read}` } }));
  assert.ok(said(afterName.description).includes(aloneInNameOrder.slice(0, aloneInNameOrder.indexOf(':') + 1)), `after_name's description: ${aloneInNameOrder}`);

  for (const [method, type] of [['put', 'application/json'], ['patch', 'application/merge-patch+json']] as const) {
    const res = await fetch(`${s.url}/plants/42`, {
      method: method.toUpperCase(),
      headers: { authorization: `Bearer ${s.token.write}`, 'content-type': type },
      body: '{"id": 7, "name": "Fern"}',
    });
    const text = await message(res);
    assert.ok(said(REPO_DOCUMENT.paths['/plants/{id}'][method].requestBody.description).includes(text), `${method}'s body description does not quote: ${text}`);
  }

  const future = await message(
    await fetch(`${s.url}/webhooks/wh_Vh3q9LmT0xKa2bYc/recover`, {
      method: 'POST',
      headers: { authorization: `Bearer ${manage}`, 'content-type': 'application/json' },
      body: '{"since": "2999-01-01T00:00:00Z"}',
    }),
  );
  const recover = said(REPO_DOCUMENT.paths['/webhooks/{id}/recover'].post.requestBody.description);
  assert.ok(anyTime(recover).includes(anyTime(future)), `recover's body description does not quote: ${future}`);
});

test('the pattern the document gives If-Match and If-None-Match accepts exactly the values the service accepts', async (t) => {
  const s = await startApp(t);
  const values = [
    '*', '"42"', 'W/"42"', '"1", "2"', '"1",W/"2" ,  "3"', '"1",', '""', '"a!#~"', ` ${'"1",'.repeat(31)}"32"`,
    'moss', '42', '"1",,"2"', ',"1"', '"1" "2"', 'W/ "1"', '"a"b"', '* , "1"', '"1",*', `${'"1",'.repeat(32)}"33"`,
  ];
  for (const [header, method] of [['If-Match', 'DELETE'], ['If-None-Match', 'GET']] as const) {
    const param = deref(REPO_DOCUMENT, REPO_DOCUMENT.components.parameters[header.replace(/-/g, '')]);
    const pattern = new RegExp(param.schema.pattern, 'u');
    for (const value of values) {
      // An absent plant: 404 once the header is understood, 400 when it is not.
      const res = await fetch(`${s.url}/plants/99`, { method, headers: { authorization: `Bearer ${s.token.all}`, [header]: value } });
      assert.equal(pattern.test(value.trim()), res.status === 404, `${header}: ${value} (the service answered ${res.status})`);
    }
  }
});
