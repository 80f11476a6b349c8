// Hostile JWT-shaped tokens (random or odd headers and payloads, wrong claim types, crit, b64=false) are
// always a 401 Error with error="invalid_token": never a 500, a 403 or a hang.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { createHmac } from 'node:crypto';
import { startApp } from '../helpers/app.js';
import { AUDIENCE } from '../helpers/jwt-issuer.js';
import { assertInvalidToken, listPlants } from '../helpers/requests.js';

const SECRET = 'hostile-test-secret-0123456789abcdef';
const b64 = (v: unknown) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)).toString('base64url');

/** Signs whatever header and payload with the right secret, so only the claims or header can be wrong. */
function signed(header: unknown, payload: unknown): string {
  const input = `${b64(header)}.${b64(payload)}`;
  return `${input}.${createHmac('sha256', SECRET).update(input).digest('base64url')}`;
}

test('odd but well-signed headers and claims are refused with 401 invalid_token', async (t) => {
  const s = await startApp(t, { config: { jwtHs256Secret: SECRET, jwtAudience: [AUDIENCE] } });
  const exp = Math.floor(Date.now() / 1000) + 300;
  const good = { sub: 'u', aud: AUDIENCE, exp, scope: 'plants:read' };
  assert.equal((await listPlants(s.url, signed({ alg: 'HS256' }, good))).status, 200, 'the baseline token works');
  const cases: [unknown, unknown][] = [
    [{ alg: 'HS256', crit: ['exp'] }, good],
    [{ alg: 'HS256', b64: false, crit: ['b64'] }, good],
    [{ alg: 'HS256' }, { ...good, exp: String(exp) }],
    [{ alg: 'HS256' }, { ...good, exp: 1e308 * 10 }],
    [{ alg: 'HS256' }, { ...good, nbf: 'soon' }],
    [{ alg: 'HS256' }, { ...good, sub: 42 }],
    [{ alg: 'HS256' }, { ...good, sub: '' }],
    [{ alg: 'HS256' }, { ...good, iss: { url: 'x' } }],
    [{ alg: 'HS256' }, { ...good, aud: [42] }],
    [{ alg: 'HS256' }, { ...good, scp: { 'plants:read': true } }],
    [{ alg: 'HS256' }, [good]],
    [{ alg: 'HS256' }, 'not json'],
    [{ alg: 'HS256' }, 'null'],
    [['HS256'], good],
    [{ alg: 'none' }, good],
    [{ alg: 'hs256' }, good],
  ];
  for (const [header, payload] of cases) {
    const token = signed(header, payload);
    await assertInvalidToken(await listPlants(s.url, token), /not valid|expired/, token);
  }
});

test('random three-segment tokens are refused with 401 invalid_token', async (t) => {
  const s = await startApp(t, { config: { jwtHs256Secret: SECRET, authFailuresPerMinute: 1_000_000 } });
  const segment = fc.oneof(
    fc.base64String({ maxLength: 60 }).map((x) => x.replace(/=+$/, '').replace(/\+/g, '-').replace(/\//g, '_')),
    fc.jsonValue({ maxDepth: 3 }).map(b64),
    fc.dictionary(fc.constantFrom('alg', 'kid', 'typ', 'crit', 'b64', 'jku', 'jwk', 'x5u'), fc.jsonValue({ maxDepth: 2 })).map(b64),
  );
  await fc.assert(
    fc.asyncProperty(segment, segment, segment, async (a, b, c) => {
      if (!a || !b) return;
      const token = `${a}.${b}.${c}`;
      const res = await listPlants(s.url, token);
      await assertInvalidToken(res, /not valid|expired/, token);
    }),
    { numRuns: 150, interruptAfterTimeLimit: 20_000 },
  );
});
