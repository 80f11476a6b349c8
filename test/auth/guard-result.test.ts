// The bearer guard answers with a result record and never throws: a principal, or the refusal's reason,
// catalogue code and headers. The failure throttle counts only tokens that fail verification.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyRequest } from 'fastify';
import { bearerGuard } from '../../src/auth/bearer-guard.js';
import { createFailureThrottle } from '../../src/auth/failure-throttle.js';
import { createFixedWindowLimiter } from '../../src/limits/fixed-window.js';
import { startApp } from '../helpers/app.js';

function request(ip: string, ...authorization: string[]): FastifyRequest {
  const rawHeaders = authorization.flatMap((value) => ['Authorization', value]);
  return { ip, raw: { rawHeaders }, headers: authorization.length > 0 ? { authorization: authorization.join(', ') } : {} } as unknown as FastifyRequest;
}

test('the guard returns a principal or a refusal record for each kind of request', async (t) => {
  const s = await startApp(t);
  const failures = createFixedWindowLimiter({ limit: 2, windowMs: 60_000 });
  const guard = bearerGuard(s.tokens, createFailureThrottle(failures), [{ scopes: ['plants:read'] }]);
  const refusal = async (req: FastifyRequest) => {
    const result = await guard(req);
    assert.equal(result.ok, false);
    return result.ok ? undefined : { reason: result.reason, code: result.code, challenge: result.headers['www-authenticate'] };
  };

  const ok = await guard(request('192.0.2.1', `Bearer ${s.token.read}`));
  assert.ok(ok.ok);
  assert.match(ok.token.id, /^tok_/);
  assert.deepEqual(ok.token.scopes, ['plants:read']);

  assert.deepEqual(await refusal(request('192.0.2.1')), { reason: 'missing', code: 'UNAUTHENTICATED', challenge: 'Bearer realm="plant-store"' });
  assert.deepEqual(await refusal(request('192.0.2.1', 'Basic dXNlcjpwYXNz')), { reason: 'malformed', code: 'UNAUTHENTICATED', challenge: 'Bearer realm="plant-store"' });
  assert.equal((await refusal(request('192.0.2.1', `Bearer ${s.token.read}`, `Bearer ${s.token.read}`)))?.code, 'BAD_REQUEST');
  assert.deepEqual(await refusal(request('192.0.2.1', `Bearer ${s.token.write}`)), {
    reason: 'insufficient_scope', code: 'INSUFFICIENT_SCOPE', challenge: 'Bearer realm="plant-store", error="insufficient_scope", scope="plants:read"',
  });
  assert.equal(failures.peek('192.0.2.1').remaining, 2, 'only failed verifications count');

  const unknown = `pst_${'Q'.repeat(43)}`;
  for (let i = 0; i < 2; i++) {
    assert.deepEqual(await refusal(request('192.0.2.1', `Bearer ${unknown}`)), {
      reason: 'unknown', code: 'INVALID_TOKEN', challenge: 'Bearer realm="plant-store", error="invalid_token", error_description="the access token is not valid"',
    });
  }
  const throttled = await guard(request('192.0.2.1', `Bearer ${unknown}`));
  assert.ok(!throttled.ok);
  assert.equal(throttled.reason, 'throttled');
  assert.equal(throttled.code, 'TOO_MANY_AUTH_FAILURES');
  assert.match(throttled.headers['retry-after'] ?? '', /^\d+$/);
  // A valid token is never throttled; another address's failures are plain refusals.
  assert.ok((await guard(request('192.0.2.1', `Bearer ${s.token.read}`))).ok);
  assert.equal((await refusal(request('192.0.2.2', `Bearer ${unknown}`)))?.code, 'INVALID_TOKEN');
});
