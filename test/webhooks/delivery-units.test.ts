// Unit tests of the pure parts of delivery: Standard Webhooks signing (checked against the off-the-shelf
// library), the retry policy (schedule, jitter bounds, Retry-After, 410, 2xx), the SSRF guard, and the delivery
// message (ce-* headers, the envelope).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { AppError } from '../../src/errors/catalogue.js';
import { generateWebhookSecret, sign } from '../../src/webhooks/signing.js';
import {
  decideOutcome,
  MAX_ATTEMPTS,
  MAX_RETRY_AFTER_MS,
  parseRetryAfter,
  RETRY_SCHEDULE_MS,
  retryDelayMs,
} from '../../src/webhooks/retry-policy.js';
import {
  ADDRESS_REFUSED_MESSAGE,
  addressProblem,
  checkSendTarget,
  checkWebhookUrl,
  CLOUD_HOST_ADDRESSES,
  createGuardedLookup,
  WebhookAddressRefusedError,
} from '../../src/webhooks/ssrf-guard.js';
import { newEventId } from '../../src/events/event.js';
import { plantEvent } from '../../src/plants/plant-event.js';
import { deliveryMessage, plantIdOf } from '../../src/webhooks/delivery-message.js';

const S = 1_000;
const M = 60 * S;
const H = 60 * M;

// --- signing ---------------------------------------------------------------------------------------------

test('a secret is whsec_ + padded base64 of 32 random bytes, different every time, and the library accepts it', () => {
  const seen = new Set<string>();
  for (let i = 0; i < 50; i++) {
    const s = generateWebhookSecret();
    assert.match(s, /^whsec_[A-Za-z0-9+/]{43}=$/);
    assert.equal(Buffer.from(s.slice(6), 'base64').length, 32);
    assert.doesNotThrow(() => new Webhook(s));
    seen.add(s);
  }
  assert.equal(seen.size, 50);
});

test('sign() is v1,base64(HMAC-SHA256(decoded secret, id.timestamp.body)) and standardwebhooks verifies it', () => {
  const secret = generateWebhookSecret();
  const id = 'msg_2Lz3u4';
  const ts = Math.floor(Date.now() / 1000);
  // Non-ASCII and an int64 beyond 2^53: the signature covers the exact UTF-8 bytes.
  const body = '{"id":9223372036854775807,"name":"Ficus ü 🌿","tag":"x"}';
  const sig = sign(secret, id, ts, body);
  const expected = createHmac('sha256', Buffer.from(secret.slice(6), 'base64')).update(`${id}.${ts}.${body}`).digest('base64');
  assert.equal(sig, `v1,${expected}`);
  assert.equal(sign(secret, id, ts, Buffer.from(body, 'utf8')), sig);
  const headers = { 'webhook-id': id, 'webhook-timestamp': String(ts), 'webhook-signature': sig };
  assert.deepEqual(new Webhook(secret).verify(body, headers), { id: 9223372036854775807, name: 'Ficus ü 🌿', tag: 'x' });
  // Any change of id, timestamp, body or key breaks it.
  assert.throws(() => new Webhook(secret).verify(body + ' ', headers));
  assert.throws(() => new Webhook(secret).verify(body, { ...headers, 'webhook-id': 'msg_other' }));
  assert.throws(() => new Webhook(secret).verify(body, { ...headers, 'webhook-timestamp': String(ts - 1) }));
  assert.throws(() => new Webhook(generateWebhookSecret()).verify(body, headers));
});

test('sign() refuses malformed secrets and timestamps', () => {
  assert.throws(() => sign('not-a-secret', 'm', 1, 'x'), /whsec_/);
  assert.throws(() => sign('whsec_!!!', 'm', 1, 'x'), /base64/);
  assert.throws(() => sign('whsec_AAAA', 'm', 1, 'x'), /16 bytes/);
  assert.throws(() => sign(generateWebhookSecret(), 'm', 1.5, 'x'), /unix seconds/);
});

// --- retry policy ----------------------------------------------------------------------------------------

const NOW = new Date('2030-01-01T00:00:00Z');
const mid = () => 0.5; // no jitter

test('the schedule is 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h: 8 attempts, then failed', () => {
  assert.deepEqual(RETRY_SCHEDULE_MS, [5 * S, 5 * M, 30 * M, 2 * H, 5 * H, 10 * H, 10 * H]);
  assert.equal(MAX_ATTEMPTS, 8);
  for (let made = 0; made < 7; made++) {
    const out = decideOutcome({ statusCode: 500 }, made, NOW, mid);
    assert.deepEqual(out, { status: 'pending', nextAttemptAt: new Date(NOW.getTime() + RETRY_SCHEDULE_MS[made]!) }, `after attempt ${made + 1}`);
  }
  assert.deepEqual(decideOutcome({ statusCode: 500 }, 7, NOW, mid), { status: 'failed' });
  assert.deepEqual(decideOutcome({ statusCode: null }, 7, NOW, mid), { status: 'failed' });
  assert.deepEqual(decideOutcome({ statusCode: 500 }, 12, NOW, mid), { status: 'failed' });
});

test('jitter stays within +-10% for any random value, and spreads', () => {
  for (let retry = 1; retry <= 7; retry++) {
    const base = RETRY_SCHEDULE_MS[retry - 1]!;
    assert.equal(retryDelayMs(retry, () => 0), Math.round(base * 0.9));
    assert.ok(retryDelayMs(retry, () => 0.999999) <= base * 1.1);
    assert.ok(retryDelayMs(retry, () => 0.999999) > base * 1.0999);
    // Out-of-range randoms are clamped, never outside the band.
    assert.equal(retryDelayMs(retry, () => -5), Math.round(base * 0.9));
    assert.equal(retryDelayMs(retry, () => 7), Math.round(base * 1.1));
  }
  const delays = new Set(Array.from({ length: 200 }, () => retryDelayMs(2)));
  for (const d of delays) assert.ok(d >= 270_000 && d <= 330_000, String(d));
  assert.ok(delays.size > 100, 'Math.random jitter should spread the delays');
  assert.throws(() => retryDelayMs(0), RangeError);
  assert.throws(() => retryDelayMs(8), RangeError);
});

test('any 2xx succeeds; 410 disables; 3xx, 4xx, 5xx, timeouts and connection errors are retried', () => {
  for (const s of [200, 201, 202, 204, 299]) assert.deepEqual(decideOutcome({ statusCode: s }, 0, NOW, mid), { status: 'succeeded' });
  const gone = decideOutcome({ statusCode: 410 }, 3, NOW, mid);
  assert.equal(gone.status, 'disable-subscription');
  assert.match((gone as { reason: string }).reason, /410/);
  for (const s of [null, 100, 301, 302, 307, 308, 400, 401, 404, 409, 413, 500, 502, 504]) {
    assert.equal(decideOutcome({ statusCode: s }, 0, NOW, mid).status, 'pending', String(s));
  }
});

test('Retry-After on 429 and 503 waits at least that long (seconds or HTTP-date), capped at 24 h; elsewhere it is ignored', () => {
  const at = (out: ReturnType<typeof decideOutcome>) => (out.status === 'pending' ? out.nextAttemptAt.getTime() - NOW.getTime() : NaN);
  assert.equal(at(decideOutcome({ statusCode: 429, retryAfter: '120' }, 0, NOW, mid)), 120 * S);
  assert.equal(at(decideOutcome({ statusCode: 503, retryAfter: '3600' }, 0, NOW, mid)), H);
  const date = new Date(NOW.getTime() + 2 * H).toUTCString();
  assert.equal(at(decideOutcome({ statusCode: 503, retryAfter: date }, 0, NOW, mid)), 2 * H);
  // Shorter than the schedule: the schedule wins (at least that long, not exactly).
  assert.equal(at(decideOutcome({ statusCode: 429, retryAfter: '1' }, 2, NOW, mid)), 30 * M);
  assert.equal(at(decideOutcome({ statusCode: 429, retryAfter: new Date(NOW.getTime() - H).toUTCString() }, 0, NOW, mid)), 5 * S);
  // Capped.
  assert.equal(at(decideOutcome({ statusCode: 429, retryAfter: String(30 * 24 * 3600) }, 0, NOW, mid)), MAX_RETRY_AFTER_MS);
  assert.equal(MAX_RETRY_AFTER_MS, 24 * H);
  // Other statuses and garbage values: the schedule.
  assert.equal(at(decideOutcome({ statusCode: 500, retryAfter: '3600' }, 0, NOW, mid)), 5 * S);
  for (const junk of ['soon', '-5', '1.5', '', '  ', '12abc']) {
    assert.equal(at(decideOutcome({ statusCode: 429, retryAfter: junk }, 0, NOW, mid)), 5 * S, JSON.stringify(junk));
  }
  // Retry-After does not buy extra attempts: the 8th failure is final either way.
  assert.deepEqual(decideOutcome({ statusCode: 503, retryAfter: '10' }, 7, NOW, mid), { status: 'failed' });
  assert.equal(parseRetryAfter(' 30 ', NOW), 30 * S);
  assert.equal(parseRetryAfter(null, NOW), undefined);
  assert.equal(parseRetryAfter('Wed, 21 Oct 2015 07:28:00 GMT', NOW), 0);
});

// --- SSRF guard ------------------------------------------------------------------------------------------

const BLOCKED = [
  '127.0.0.1', '127.255.255.254', '10.0.0.1', '172.16.5.4', '172.31.255.255', '192.168.1.1', '169.254.169.254', '169.254.0.1',
  '100.64.0.1', '0.0.0.0', '0.1.2.3', '224.0.0.1', '255.255.255.255', '240.0.0.1', '192.0.2.1', '198.18.0.1',
  '::1', '::', '::ffff:127.0.0.1', '::ffff:10.0.0.1', '::ffff:169.254.169.254', '::ffff:7f00:1', 'fe80::1', 'fc00::1', 'fd00:ec2::254',
  'ff02::1', 'fec0::1', '64:ff9b::7f00:1', '2002:7f00:1::1', '2001:db8::1', '::7f00:1', '100::1',
];
const PUBLIC = ['1.1.1.1', '8.8.8.8', '93.184.215.14', '172.32.0.1', '100.128.0.1', '2606:4700:4700::1111', '2a00:1450:4001::200e', '::ffff:8.8.8.8'];

test('addressProblem rejects loopback, private, link-local, metadata, CGNAT, unique-local, multicast, mapped and special addresses', () => {
  for (const a of BLOCKED) assert.ok(addressProblem(a), `${a} should be rejected`);
  for (const a of PUBLIC) assert.equal(addressProblem(a), undefined, a);
  assert.match(addressProblem('169.254.169.254')!, /cloud metadata/);
  assert.match(addressProblem('169.254.0.1')!, /link-local/);
  assert.match(addressProblem('::ffff:127.0.0.1')!, /loopback/);
  assert.match(addressProblem('fd00:ec2::254')!, /cloud metadata/);
  assert.match(addressProblem('fd00:ec2::253')!, /unique-local/);
});

async function rejected(url: string, allowed: string[] = []): Promise<string> {
  try {
    await checkWebhookUrl(url, allowed);
  } catch (err) {
    assert.ok(err instanceof AppError, `not an AppError: ${String(err)}`);
    assert.equal(err.code, 'WEBHOOK_URL_REJECTED');
    assert.equal(err.status, 400);
    // Address problems answer one message; the detail is for the log and the CLI.
    if (err instanceof WebhookAddressRefusedError) {
      assert.equal(err.message, ADDRESS_REFUSED_MESSAGE);
      return err.detail;
    }
    return err.message;
  }
  assert.fail(`${url} was accepted`);
}

test('checkWebhookUrl rejects internal targets with a clear reason', async () => {
  assert.match(await rejected('http://127.0.0.1:8080/hooks'), /loopback/);
  assert.match(await rejected('http://[::1]/hooks'), /loopback/);
  assert.match(await rejected('http://[::ffff:127.0.0.1]/x'), /loopback/);
  assert.match(await rejected('http://10.1.2.3/x'), /private/);
  assert.match(await rejected('http://192.168.0.10/x'), /private/);
  assert.match(await rejected('http://169.254.169.254/latest/meta-data/'), /cloud metadata/);
  assert.match(await rejected('http://169.254.1.1/'), /link-local/);
  assert.match(await rejected('http://[fd00:ec2::254]/'), /cloud metadata/);
  assert.match(await rejected('http://[fd00::1]/'), /unique-local/);
  assert.match(await rejected('http://[fe80::1]/'), /link-local/);
  assert.match(await rejected('http://0.0.0.0:9/'), /unspecified/);
  // WHATWG URL normalises odd IPv4 spellings first, so they cannot sneak past.
  assert.match(await rejected('http://0x7f.1/'), /loopback/);
  assert.match(await rejected('http://2130706433/'), /loopback/);
  // A name that resolves to loopback.
  assert.match(await rejected('http://localhost:3000/hooks'), /localhost resolves to .*loopback/);
  // Shape.
  assert.match(await rejected('ftp://1.1.1.1/'), /http or https/);
  assert.match(await rejected('file:///etc/passwd'), /http or https/);
  assert.match(await rejected('javascript:alert(1)'), /http or https/);
  assert.match(await rejected('http://user:pw@1.1.1.1/'), /credentials/);
  assert.match(await rejected('http://user@1.1.1.1/'), /credentials/);
  assert.match(await rejected('not a url'), /absolute URL/);
  assert.match(await rejected('https://no-such-host.invalid/'), /does not resolve/);
});

test('checkWebhookUrl accepts public addresses, and allowlisted hosts (exact, case-insensitive) skip the address check', async () => {
  await checkWebhookUrl('https://1.1.1.1/hooks', []);
  await checkWebhookUrl('http://[2606:4700:4700::1111]:8443/x', []);
  await checkWebhookUrl('http://127.0.0.1:9999/hooks', ['127.0.0.1']);
  await checkWebhookUrl('http://LOCALHOST:9999/hooks', ['localhost']);
  await checkWebhookUrl('http://localhost:9999/hooks', ['LocalHost']);
  await checkWebhookUrl('http://[::1]:9999/hooks', ['[::1]']);
  await checkWebhookUrl('http://[0:0::1]:9999/hooks', ['::1']);
  // Allowlisting an address does not allowlist a name that resolves to it, nor other addresses.
  assert.match(await rejected('http://localhost:9999/hooks', ['127.0.0.1']), /loopback/);
  assert.match(await rejected('http://127.0.0.2:9999/hooks', ['127.0.0.1']), /loopback/);
  assert.match(await rejected('http://10.0.0.1/', ['10.0.0.2', 'localhost']), /private/);
  // The allowlist never relaxes the shape rules.
  assert.match(await rejected('ftp://127.0.0.1/', ['127.0.0.1']), /http or https/);
  assert.match(await rejected('http://a:b@127.0.0.1/', ['127.0.0.1']), /credentials/);
});

test('cloud metadata and host addresses are refused in any notation, even when WEBHOOK_ALLOWED_HOSTS lists them', async () => {
  for (const url of [
    'http://168.63.129.16/machine',
    'http://[::ffff:168.63.129.16]/',
    'http://[::ffff:a83f:8110]/',
    'http://0xa8.63.129.16/',
    'http://2822734096/',
    'http://169.254.169.254/latest/meta-data/',
    'http://[fd00:ec2:0::254]/',
    'http://[fd20:ce::254]/',
    'http://100.100.100.200/',
    'http://192.0.0.192/',
  ]) {
    assert.match(await rejected(url), /cloud metadata or host address/, url);
    const host = new URL(url).hostname;
    assert.match(await rejected(url, [host]), /cloud metadata or host address, which is never allowed/, `${url} allowlisted`);
    assert.throws(() => checkSendTarget(url, [host]), (err: Error) => err.name === 'AddressRejectedError' && /cloud metadata or host address/.test(err.message), url);
  }
  // Its neighbours are ordinary public addresses.
  await checkWebhookUrl('http://168.63.129.17/', []);
  // Every listed address is covered, in its written form.
  for (const a of CLOUD_HOST_ADDRESSES) assert.match(addressProblem(a) ?? '', /cloud metadata or host address/, a);
});

test('the connect-time lookup refuses names resolving to internal addresses (DNS rebinding), in both callback forms', async () => {
  const lookup = createGuardedLookup([]);
  const one = (host: string, opts: object) =>
    new Promise<{ err: NodeJS.ErrnoException | null; address: unknown }>((resolve) =>
      lookup(host, opts, (err, address) => resolve({ err, address })),
    );
  const single = await one('localhost', {});
  assert.equal(single.err?.name, 'AddressRejectedError');
  assert.match(single.err!.message, /loopback/);
  const all = await one('localhost', { all: true });
  assert.equal(all.err?.name, 'AddressRejectedError');
  // Allowlisted by name: resolves normally, in the shape asked for.
  const allowed = createGuardedLookup(['localhost']);
  const ok = await new Promise<{ err: unknown; address: unknown; family: unknown }>((resolve) =>
    allowed('localhost', { family: 4 }, (err, address, family) => resolve({ err, address, family })),
  );
  assert.equal(ok.err, null);
  assert.equal(ok.address, '127.0.0.1');
  assert.equal(ok.family, 4);
  const okAll = await new Promise<{ err: unknown; address: unknown }>((resolve) =>
    allowed('localhost', { all: true, family: 4 }, (err, address) => resolve({ err, address })),
  );
  assert.deepEqual(okAll.address, [{ address: '127.0.0.1', family: 4 }]);
});

test('event ids are 16 bytes: the time, then 80 random bits distinct across many pool refills', () => {
  const at = Date.UTC(2026, 10, 25, 6, 40);
  const ids = Array.from({ length: 5_000 }, () => newEventId(at));
  assert.equal(new Set(ids).size, ids.length);
  for (const id of ids) assert.match(id, /^msg_[A-Za-z0-9_-]{22}$/);
  const bytes = ids.map((id) => Buffer.from(id.slice(4), 'base64url'));
  for (const b of bytes) assert.equal(b.readUIntBE(0, 6), at);
  assert.equal(new Set(bytes.map((b) => b.subarray(6).toString('hex'))).size, ids.length);
  // Ids of the same millisecond share their first 8 characters (the 6 bytes of time), whatever their random part.
  assert.equal(new Set(ids.map((id) => id.slice(0, 12))).size, 1);
  const before = Date.now();
  const made = Buffer.from(newEventId().slice(4), 'base64url').readUIntBE(0, 6);
  assert.ok(made >= before && made <= Date.now(), 'the time of an id made now is now');
});

test('the delivery message: ce-subject is the id of every event body, the extremes of int64 included; the envelope wraps the body as text', () => {
  const at = new Date('2026-03-14T09:26:55.012Z');
  for (const id of [-9223372036854775808n, 0n, 9223372036854775807n]) {
    for (const type of ['newPlant', 'plantUpdated', 'plantDeleted'] as const) {
      const event = plantEvent(type, { id, name: 'fern "ivy"', tag: 'x' }, 7n);
      assert.equal(plantIdOf(event.payload), String(id), event.payload);
      const plain = deliveryMessage({ eventId: event.id, eventType: type, eventCreatedAt: at, payload: event.payload, format: 'plain' });
      assert.equal(plain.body, event.payload);
      assert.deepEqual(plain.headers, {
        'ce-specversion': '1.0', 'ce-id': event.id, 'ce-source': '/plants', 'ce-type': type, 'ce-subject': String(id), 'ce-time': '2026-03-14T09:26:55.012Z',
      });
      const envelope = deliveryMessage({ eventId: event.id, eventType: type, eventCreatedAt: at, payload: event.payload, format: 'envelope' });
      assert.equal(envelope.body, `{"type":"${type}","timestamp":"2026-03-14T09:26:55.012Z","data":${event.payload}}`);
      assert.deepEqual(envelope.headers, plain.headers);
    }
  }
  // A body that does not start with an id gets no ce-subject rather than a wrong one.
  assert.equal(plantIdOf('{"name":"x","id":1}'), undefined);
  assert.equal('ce-subject' in deliveryMessage({ eventId: 'msg_x', eventType: 'newPlant', eventCreatedAt: at, payload: '{}', format: 'plain' }).headers, false);
});
