// JWTs made with a shared HS256 secret: accepted with that secret and algorithm only; a secret shorter than
// 32 bytes, or two key sources at once, stop the real server at start-up with a clear message and exit 1.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { BIN, runCli, startApp, tempDir } from '../helpers/app.js';
import { mint, signingKey } from '../helpers/jwt-issuer.js';
import { assertInvalidToken, listPlants, postWith } from '../helpers/requests.js';

const SECRET = 'a-shared-secret-of-more-than-32-bytes!';

test('an HS256 token made with the configured secret is accepted; another secret or HS512 is not', async (t) => {
  const s = await startApp(t, { config: { jwtHs256Secret: SECRET } });
  const token = await mint({ secret: SECRET }, { claims: { scope: 'plants:write' } });
  assert.equal((await postWith(s.url, token, 1)).status, 200);

  const wrong = await mint({ secret: SECRET + 'x' }, { claims: { scope: 'plants:write' } });
  await assertInvalidToken(await postWith(s.url, wrong, 2), /bad signature/, wrong);
  const hs512 = await mint({ secret: SECRET, alg: 'HS512' }, { claims: { scope: 'plants:write' } });
  await assertInvalidToken(await postWith(s.url, hs512, 3), /algorithm is not accepted/, hs512);
  const rs256 = await mint(await signingKey('RS256', 'k'), { claims: { scope: 'plants:write' } });
  await assertInvalidToken(await postWith(s.url, rs256, 4), /algorithm is not accepted/, rs256);
  assert.equal(await s.store.countPlants(), 1);
});

test('without a JWT key source a JWT is just an unknown token', async (t) => {
  const s = await startApp(t);
  const token = await mint({ secret: SECRET }, { claims: { scope: 'plants:read' } });
  await assertInvalidToken(await listPlants(s.url, token), /not valid/, token);
});

/** Runs `plant-store serve` and returns how it ended; a server that starts is killed and reported. */
function serveOnce(env: Record<string, string>): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const proc = spawn(process.execPath, [BIN, 'serve'], { env: { ...process.env, PORT: '0', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    const collect = (d: Buffer) => {
      out += d.toString();
      if (out.includes('Server listening')) proc.kill('SIGKILL');
    };
    proc.stdout.on('data', collect);
    proc.stderr.on('data', collect);
    const timer = setTimeout(() => proc.kill('SIGKILL'), 15_000);
    proc.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, out });
    });
  });
}

test('serve refuses an HS256 secret under 32 bytes, or two key sources, with exit 1 and a clear message', async (t) => {
  const dir = tempDir(t);
  const db = { DATABASE_URL: `sqlite:${join(dir, 'x.db')}`, BOOTSTRAP_TOKEN: 'false' };
  const short = 'only-31-bytes-of-shared-secret!';
  assert.equal(Buffer.byteLength(short), 31);
  const cases: { env: Record<string, string>; message: RegExp }[] = [
    { env: { JWT_HS256_SECRET: short }, message: /^plant-store: invalid configuration:\n\s+JWT_HS256_SECRET: an HS256 secret needs at least 32 bytes, this one has 31/m },
    { env: { JWT_HS256_SECRET: SECRET, JWT_JWKS_URL: 'https://idp.example/jwks.json' }, message: /JWT_JWKS_URL, JWT_HS256_SECRET: set at most one JWT key source/ },
    { env: { JWT_JWKS_URL: 'http://idp.example/jwks.json' }, message: /JWT_JWKS_URL: expected an https URL/ },
    { env: { JWT_AUDIENCE: 'plant-store' }, message: /JWT_AUDIENCE: set JWT_JWKS_URL, JWT_PUBLIC_KEY or JWT_HS256_SECRET too/ },
  ];
  const results = await Promise.all(cases.map((c) => serveOnce({ ...db, ...c.env })));
  for (const [i, r] of results.entries()) {
    assert.equal(r.code, 1, r.out);
    assert.match(r.out, cases[i]!.message);
    assert.doesNotMatch(r.out, /Server listening/);
    assert.ok(!r.out.includes(short) && !r.out.includes(SECRET), 'the secret was printed');
  }
  // The same secret at 32 bytes starts.
  const ok = await serveOnce({ ...db, JWT_HS256_SECRET: short + '!' });
  assert.match(ok.out, /Server listening/);
});

test('plant-store config masks the HS256 secret and shows a public key by its fingerprint', async () => {
  const masked = await runCli(['config'], { JWT_HS256_SECRET: SECRET, JWT_AUDIENCE: 'plant-store,admin' });
  assert.equal(masked.code, 0, masked.stderr);
  assert.match(masked.stdout, /^JWT_HS256_SECRET=\*\*\*\*$/m);
  assert.match(masked.stdout, /^JWT_AUDIENCE=plant-store,admin$/m);
  assert.ok(!masked.stdout.includes(SECRET) && !masked.stderr.includes(SECRET), 'the secret was printed');

  const key = await signingKey('ES256', 'k');
  const shown = await runCli(['config'], { JWT_PUBLIC_KEY: key.pem });
  assert.equal(shown.code, 0, shown.stderr);
  assert.match(shown.stdout, /^JWT_PUBLIC_KEY=sha256:[0-9a-f]{16}$/m);
  assert.match(shown.stdout, /^JWT_HS256_SECRET=$/m);
  assert.match(shown.stdout, /^JWT_CLOCK_SKEW_MS=30000$/m);
});
