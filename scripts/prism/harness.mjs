// The proxy of scripts/prism-run.mjs: the service started behind Prism, one case sent through it and its
// violations sorted (the kinds the entry's header names), and the texts of Prism's own limits.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import YAML from 'yaml';
import { nodeExecutable, RUNTIME_LINE } from '../runtimes.mjs';
import { freePort, send, startProcess } from './processes.mjs';

/** What the entry's options say: the Prism executable, and whether every request is printed. */
export const settings = { prism: undefined, verbose: false };

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const DOCUMENT = join(ROOT, 'openapi/plant-store.yaml');
const BIN = join(ROOT, 'bin/plant-store.js');
const NODE = nodeExecutable(RUNTIME_LINE);
export const DOC = YAML.parse(readFileSync(DOCUMENT, 'utf8'));
export const BIG = '9223372036854775807';

/** Starts the service on `databaseUrl` with `env`, and Prism in front of it; returns the proxy's port. */
export async function serviceBehindPrism(databaseUrl, env, tokens) {
  const base = { DATABASE_URL: databaseUrl, BOOTSTRAP_TOKEN: 'false', WORKERS: '1', LOG_LEVEL: 'info', WEBHOOK_ALLOWED_HOSTS: '127.0.0.1', ...env };
  execFileSync(NODE, [BIN, 'migrate'], { env: { ...process.env, ...base }, stdio: 'ignore' });
  const secrets = {};
  for (const [name, scopes] of Object.entries(tokens)) {
    secrets[name] = execFileSync(NODE, [BIN, 'token', 'create', '--scopes', scopes, '--name', name], { env: { ...process.env, ...base }, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim().split('\n').at(-1);
  }
  const servicePort = await freePort();
  await startProcess(NODE, [BIN, 'serve'], { ...base, PORT: String(servicePort), HOST: '127.0.0.1' }, /Server listening at/, 'plant-store');
  const proxyPort = await freePort();
  await startProcess(settings.prism, ['proxy', DOCUMENT, `http://127.0.0.1:${servicePort}`, '--port', String(proxyPort), '--host', '127.0.0.1', '--cors', 'false'], {}, /Prism is listening|listening on/i, 'prism');
  return { port: proxyPort, servicePort, secrets };
}

export const results = [];

/**
 * Sends one case through the proxy and records its status and Prism's violations. A case with `prismLimit`
 * names what Prism itself does to it; when its answer is not the expected one, the same request is sent to
 * the service directly, and if that answer is, the difference is Prism's.
 */
export async function run(store, { port, servicePort }, c) {
  const res = await send(port, c);
  let violations = [];
  if (res.headers['sl-violations']) {
    try {
      violations = JSON.parse(res.headers['sl-violations']);
    } catch {
      violations = [{ location: ['?'], message: `unreadable sl-violations: ${res.headers['sl-violations']}` }];
    }
  }
  const expected = Array.isArray(c.expect) ? c.expect : [c.expect];
  const r = { store, name: c.name, method: c.method, path: c.path, status: res.status, expected, violations: kindsOf(c, violations, res) };
  if (!expected.includes(res.status)) {
    const what = `answered ${res.status} through Prism, expected ${expected.join(' or ')}: ${res.text.slice(0, 160)}`;
    const direct = c.prismLimit ? await send(servicePort, c) : undefined;
    if (direct && expected.includes(direct.status)) r.prismLimit = `${what}; the service answers ${direct.status} to the request sent directly: ${c.prismLimit}`;
    else r.statusProblem = what;
  }
  results.push(r);
  if (settings.verbose) process.stdout.write(`${store} ${c.method} ${c.path} -> ${res.status} ${violations.length ? JSON.stringify(violations) : ''}\n`);
  return res;
}

/**
 * Sorts one answer's violations: Prism's int64 limits; a violation of the request of a case that is bad on
 * purpose; or a finding. An item of a `oneOf` (a feed event) whose int64 fails Prism's bound fails its own
 * branch, so Prism reports the other branch too (`type` not its constant, members it does not have) and the
 * `oneOf` itself: those follow from the int64 limit, and are counted with it.
 */
function kindsOf(c, violations, res) {
  const int64 = violations.filter((v) => /9007199254740991/.test(`${v.message ?? ''}`)).map((v) => (v.location ?? []).join('.'));
  return violations.map((v) => {
    const at = (v.location ?? []).join('.');
    let kind = 'finding';
    if (/9007199254740991/.test(`${v.message ?? ''}`)) kind = 'int64';
    else if (at === 'response.body' && yamlHoldsItsSchema(res, v)) kind = 'yaml';
    else if (v.location?.[0] === 'request' && c.bad) kind = 'expected';
    else if (/constant|additional properties|exactly one schema in oneOf/.test(`${v.message ?? ''}`) && int64.some((l) => l.startsWith(`${(v.location ?? []).slice(0, 3).join('.')}.`))) kind = 'int64';
    return { ...v, kind, at };
  });
}

export const json = (value) => ({ 'content-type': 'application/json', body: value });

/**
 * Prism validates a body that is not JSON as its text, so a YAML answer fails a schema that describes the
 * document it holds (`type: object`, as GET /openapi.yaml declares: the schema of a YAML body is that of its
 * data, as for JSON). Prism's limit, not a finding, when the text parses as YAML and its data fits the schema.
 */
function yamlHoldsItsSchema(res, v) {
  if (!/^application\/yaml\b/.test(res.headers['content-type'] ?? '') || !/must be object/.test(`${v.message ?? ''}`)) return false;
  try {
    const data = YAML.parse(res.text);
    return data !== null && typeof data === 'object' && !Array.isArray(data) && typeof data.openapi === 'string';
  } catch {
    return false;
  }
}
export const YAML_LIMIT = 'Prism validates a YAML answer as its text, not as the data it holds, so a body whose schema describes that data (`type: object`) is "must be object"; the text parses as YAML into the document';

// What Prism does to requests and answers, whatever the document says (its issues and pull requests named).
export const HEAD_LIMIT = 'Prism reads the body of an answer to HEAD as JSON when its Content-Type says JSON (RFC 9110: the GET\'s headers, no body), fails ("invalid json response body"), and answers 500 itself (stoplightio/prism#1361 is the same failure on a 204)';
export const REENCODES = 'Prism parses a JSON request body into JavaScript numbers and forwards it written again (stoplightio/prism#1082), so an int64 beyond 2^53 arrives rounded (out of range), -0 as 0 and 1e3 as 1000 (stoplightio/prism#1992)';
