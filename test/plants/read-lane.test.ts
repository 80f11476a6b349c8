// GET /plants/{id} has a lane outside Fastify's hooks (src/plants/read-lane.ts). A client must not be
// able to tell which path answered: every kind of request is sent twice in a row, once with the lane on and
// once with it off, and the two answers must be the same bytes (apart from Date, a generated request id and the
// RateLimit field's own count), the same access line and the same metrics. The token's count must fall by
// exactly one per request on either path, refusals and hand-overs included.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { startApp } from '../helpers/app.js';
import { capturedLogger } from '../helpers/log-lines.js';
import { rawHttp } from '../helpers/raw-request.js';
import { INT64_MAX, INT64_MIN, createPlant } from './read-support.js';

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}/;

/** The answer without what may differ between two requests: the date, a generated request id, the count. */
function comparable(raw: string): string {
  return raw
    .replace(/\r\nDate: [^\r]*/i, '\r\nDate: D')
    .replace(new RegExp(`(\r\nx-request-id: )${UUID.source}`, 'i'), '$1U')
    .replace(/(\r\nratelimit: "token";r=)\d+;t=\d+/i, '$1R');
}

/** The RateLimit field's remaining count, when the answer has one. */
function remaining(raw: string): number | undefined {
  const m = /\r\nratelimit: "token";r=(\d+)/i.exec(raw);
  return m ? Number(m[1]) : undefined;
}

test('GET /plants/{id}: the read lane answers exactly as the app does, and hands everything else over', async (t) => {
  const { lines, logger } = capturedLogger();
  // A small quota, so that the token runs out within the test and its 429 is compared too.
  const quota = 60;
  const s = await startApp(t, { logger, config: { rateLimitPerToken: quota } });
  for (const p of [
    { id: '1', name: 'fern', tag: 'green' },
    { id: '2', name: 'moss' },
    { id: '0', name: 'zero', tag: '' },
    { id: INT64_MAX, name: 'the largest', tag: 'edge' },
    { id: INT64_MIN, name: 'the smallest' },
    { id: '3', name: 'ünïcødé 🌿 "q" \\ </script>', tag: 'grün 🌱' },
  ]) await createPlant(s, p);

  const owed = s.app.answersOwed;
  const lane = owed.lane;
  assert.ok(lane, 'the app has a read lane');
  let took = 0;
  const counted = (req: IncomingMessage, res: ServerResponse) => {
    const r = lane(req, res);
    if (r === true) took++;
    return r instanceof Promise ? r.then((yes) => (yes && took++, yes)) : r;
  };
  const read = s.token.read;
  const get = (path: string, headers = `Authorization: Bearer ${read}\r\n`) => `GET ${path} HTTP/1.1\r\nHost: x\r\n${headers}Connection: close\r\n\r\n`;
  /** The same request with the lane on, then off. */
  const both = async (request: string) => {
    owed.lane = counted;
    const viaLane = await rawHttp(s.port, request, { halfClose: true });
    owed.lane = undefined;
    const viaApp = await rawHttp(s.port, request, { halfClose: true });
    owed.lane = lane;
    return [viaLane, viaApp] as const;
  };
  // The token's record is cached by its first use, which the app verifies from the store.
  await rawHttp(s.port, get('/plants/1'), { halfClose: true });
  let left = quota - 1;

  const answered: [string, number][] = [
    [get('/plants/1'), 200],
    [get('/plants/2'), 200],
    [get('/plants/0'), 200],
    [get(`/plants/${INT64_MAX}`), 200],
    [get(`/plants/${INT64_MIN}`), 200],
    [get('/plants/3'), 200],
    [get('/plants/1', `Authorization: Bearer ${read}\r\nX-Request-Id: trace-7.a:b@c/d+e=f\r\n`), 200],
    [get('/plants/1', `Authorization: Bearer ${read}\r\nX-Request-Id: not a sane id\r\n`), 200],
    [get('/plants/1', `authorization:   bearer ${read}  \r\n`), 200],
    [get('/plants/1', `Authorization: Bearer ${read}\r\nContent-Length: 0\r\n`), 200],
  ];
  // Each goes to the app, which answers it as it always has.
  const handedOver: [string, number][] = [
    [get('/plants/404'), 404],
    [get('/plants/1', `Authorization: Bearer ${read}\r\nIf-None-Match: *\r\n`), 304],
    [get('/plants/1', `Authorization: Bearer ${read}\r\nIf-None-Match: "9"\r\n`), 200],
    [get('/plants/1?tag=x'), 400],
    [get('/plants/01'), 400],
    [get('/plants/-0'), 400],
    [get('/plants/9223372036854775808'), 400],
    [get('/plants/x'), 400],
    [get('/plants/1/'), 404],
    [`HEAD /plants/1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${read}\r\nConnection: close\r\n\r\n`, 200],
    [`GET /plants/1 HTTP/1.0\r\nAuthorization: Bearer ${read}\r\n\r\n`, 200],
    [`GET /plants/1 HTTP/1.1\r\nAuthorization: Bearer ${read}\r\nConnection: close\r\n\r\n`, 400],
    [`GET /plants/1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${read}\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}`, 400],
    [get('/plants/1', `Authorization: Bearer ${read}\r\nAuthorization: Bearer ${read}\r\n`), 400],
    [get('/plants/1', `Authorization: Bearer ${s.token.write}\r\n`), 403],
    [get('/plants/1', `Authorization: Bearer pst_${'A'.repeat(43)}\r\n`), 401],
    [get('/plants/1', 'Authorization: Basic eDp5\r\n'), 401],
    [get('/plants/1', ''), 401],
  ];
  for (const [request, status] of [...answered, ...handedOver]) {
    const [viaLane, viaApp] = await both(request);
    const what = JSON.stringify(request.split('\r\n').slice(0, 3).join(' | ').replace(read, '<read token>'));
    assert.equal(Number(viaLane.split(' ')[1]), status, `${what}: ${viaLane.slice(0, 200)}`);
    assert.equal(comparable(viaLane), comparable(viaApp), what);
    // Counted once on each path, whichever answered: refused and handed-over requests included.
    const r = remaining(viaLane);
    if (r !== undefined) {
      assert.equal(r, left - 1, `${what}: counted once with the lane`);
      assert.equal(remaining(viaApp), left - 2, `${what}: counted once without it`);
      left -= 2;
    }
  }
  assert.equal(took, answered.length, 'the lane answered each plain read, and only those');

  // The access lines: one per request, the same fields on both paths.
  const access = lines.filter((l) => l.msg === 'request completed');
  const generated = (id: string) => (UUID.test(id) ? 'U' : id);
  const shown = (l: Record<string, any>) => JSON.stringify({ ...l, time: 0, ms: 0, reqId: generated(l.reqId) });
  const tail = access.slice(-2 * (answered.length + handedOver.length));
  for (let i = 0; i < tail.length; i += 2) assert.equal(shown(tail[i]!), shown(tail[i + 1]!));
  assert.ok(tail.slice(0, 2 * answered.length).every((l) => typeof l.ms === 'number' && l.ms >= 0 && l.statusCode === 200 && l.method === 'GET'));

  // The metrics count the lane's answers under the operation, as the app's.
  const scraped = await s.app.metrics.scrape();
  const served = Number(/plant_store_http_requests_total\{operation="getPlant",status="200"\} (\d+)/.exec(scraped)?.[1]);
  // The first read, then each 200 twice (HEAD counts under getPlant too).
  assert.equal(served, 1 + 2 * answered.length + 2 * handedOver.filter(([, status]) => status === 200).length);
  const histogram = Number(/plant_store_http_request_duration_seconds_count\{operation="getPlant"\} (\d+)/.exec(scraped)?.[1]);
  assert.ok(histogram >= served, 'every answer is timed');

  // Once the quota is used up both paths answer the same 429, counted against the same window.
  while (left > 0) {
    await rawHttp(s.port, get('/plants/1'), { halfClose: true });
    left--;
  }
  const [limitedLane, limitedApp] = await both(get('/plants/1'));
  assert.match(limitedLane, /^HTTP\/1\.1 429 /);
  assert.equal(comparable(limitedLane).replace(/retry-after: \d+/i, 'retry-after: S'), comparable(limitedApp).replace(/retry-after: \d+/i, 'retry-after: S'));

  // While the app shuts down, the lane steps aside: the app's 503 on both paths.
  const other = get('/plants/1', `Authorization: Bearer ${s.token.all}\r\n`);
  assert.match(await rawHttp(s.port, other, { halfClose: true }), /^HTTP\/1\.1 200 /);
  s.app.drain();
  const [closingLane, closingApp] = await both(other);
  assert.match(closingLane, /^HTTP\/1\.1 503 /);
  assert.equal(comparable(closingLane), comparable(closingApp));
});

test('GET /plants/{id}: pipelined reads through the lane keep their order behind a write', async (t) => {
  const s = await startApp(t);
  await createPlant(s, { id: '1', name: 'fern' });
  const read = `Authorization: Bearer ${s.token.all}\r\n`;
  // Cache the token, so that the reads below take the lane.
  await rawHttp(s.port, `GET /plants/1 HTTP/1.1\r\nHost: x\r\n${read}Connection: close\r\n\r\n`, { halfClose: true });
  const body = '{"id":1,"name":"fern","tag":"moved"}';
  const raw = await rawHttp(
    s.port,
    `PUT /plants/1 HTTP/1.1\r\nHost: x\r\n${read}Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`
      + `GET /plants/1 HTTP/1.1\r\nHost: x\r\n${read}\r\n`
      + `GET /plants/1 HTTP/1.1\r\nHost: x\r\n${read}Connection: close\r\n\r\n`,
    { halfClose: true },
  );
  const answers = raw.split(/(?=HTTP\/1\.1 )/);
  assert.deepEqual(answers.map((a) => a.split(' ')[1]), ['200', '200', '200']);
  // Each read ran after the write before it was answered.
  for (const a of answers.slice(1)) assert.match(a, /\r\n\r\n\{"id":1,"name":"fern","tag":"moved"\}$/);
});
