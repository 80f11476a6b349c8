// Loaded into every test process (`node --test --import ./dist/test/setup/validate-responses.js`): every
// fetch answered by a server on this machine is checked against openapi/plant-store.yaml by an independent
// validator (test/helpers/response-validator.ts), and a response the document does not describe makes
// the fetch reject, so the test that made it fails with the reason.
// Not checked: /docs and its assets (a page, not API operations), raw-socket tests (they do not use fetch),
// and requests sent with the header `x-conformance: skip` (removed before sending) for servers that are not
// the plant store.
import { appendFileSync } from 'node:fs';
import { ResponseValidator } from '../helpers/response-validator.js';

const LOCAL_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]']);
const SKIP_HEADER = 'x-conformance';

/** Marks a fetch that validates responses, so a test can tell that the suite runs with validation on. */
export const VALIDATING = Symbol.for('plant-store.conformance.validating');

export class ConformanceError extends Error {
  override name = 'ConformanceError';
}

export function installResponseValidation(validator = new ResponseValidator()): () => void {
  const original = globalThis.fetch;
  const checked: typeof fetch = async (input, init) => {
    // Read method, URL and headers without building a Request, which would take a Request input's body.
    const method = init?.method ?? (input instanceof Request ? input.method : 'GET');
    const url = new URL(input instanceof Request ? input.url : String(input));
    let skip = !LOCAL_HOSTS.has(url.hostname) || url.pathname === '/docs' || url.pathname.startsWith('/docs/');
    const headers = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined));
    if (headers.get(SKIP_HEADER) === 'skip') {
      skip = true;
      headers.delete(SKIP_HEADER);
      init = { ...init, headers };
    }
    const res = await original(input, init);
    if (skip) return res;
    // A stream (text/event-stream) does not end: its status and headers are checked, its body is not read.
    const streaming = (res.headers.get('content-type') ?? '').startsWith('text/event-stream');
    const body = res.body === null || streaming ? '' : await res.clone().text();
    const problems = await validator.check(method, url.pathname, { status: res.status, headers: res.headers, body });
    // CONFORMANCE_LOG=file lists every checked response, to see what the suite covers.
    if (process.env.CONFORMANCE_LOG) {
      appendFileSync(process.env.CONFORMANCE_LOG, `${method} ${validator.matchPath(url.pathname) ?? url.pathname} ${res.status} ${problems.length ? 'FAIL' : 'ok'}\n`);
    }
    if (problems.length > 0) {
      throw new ConformanceError(
        `response not described by openapi/plant-store.yaml (${method} ${url.pathname}${url.search}):\n  ${problems.join('\n  ')}`,
      );
    }
    return res;
  };
  Object.defineProperty(checked, VALIDATING, { value: true });
  globalThis.fetch = checked;
  return () => {
    globalThis.fetch = original;
  };
}

if (process.env.CONFORMANCE_VALIDATION !== 'off') {
  const validator = new ResponseValidator();
  // Compile in the background now rather than on a test's first request, whose timing some tests measure.
  validator.warmUp().catch(() => {}); // a broken schema is reported by the check that needs it
  installResponseValidation(validator);
}
