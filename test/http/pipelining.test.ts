// Pipelining over raw sockets, by RFC 9112: requests on one connection are answered in order, each finished
// before the next starts (9.3.2); nothing behind an answer that closes the connection runs (9.6); a complete
// request keeps its connection, a 404 included. CONNECT is answered like any other refused method.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startApp } from '../helpers/app.js';
import { rawHttp, splitResponses } from '../helpers/raw-request.js';
import { storedPlant } from '../helpers/stored-plant.js';

function post(token: string, body: string): string {
  return `POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}

function get(token: string, path: string): string {
  return `GET ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n\r\n`;
}

test('a 404 of a body-less GET keeps the connection: the POST and DELETE pipelined behind it are answered, in order', async (t) => {
  const s = await startApp(t);
  const raw = await rawHttp(
    s.port,
    'GET /nope HTTP/1.1\r\nHost: x\r\n\r\n' +
      post(s.token.all, '{"id":111,"name":"behind a 404"}') +
      'GET /nope HTTP/1.1\r\nHost: x\r\n\r\n' +
      `DELETE /plants/111 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${s.token.all}\r\n\r\n`,
    { halfClose: true },
  );
  const answers = splitResponses(raw);
  assert.deepEqual(answers.map((a) => a.status), [404, 200, 404, 204], raw);
  assert.equal(answers[0]!.headers['connection'], 'keep-alive', raw);
  assert.deepEqual(JSON.parse(answers[1]!.body), { name: 'behind a 404' });
  assert.equal(await storedPlant(s.store, 111n), undefined, 'the pipelined DELETE was answered 204 but did not delete');
});

test('nothing pipelined behind an answer that closes the connection is run: the POST behind it is neither answered nor stored', async (t) => {
  const s = await startApp(t);
  const body = '{"id":1,"name":"refused"}';
  const refused = {
    // Answered before the body was read: the 401 closes the connection.
    401: `POST /plants HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
    // An HTTP/1.1 request without Host.
    400: 'GET /plants HTTP/1.1\r\n\r\n',
  };
  let id = 112n;
  for (const [status, first] of Object.entries(refused)) {
    id++;
    const raw = await rawHttp(s.port, first + post(s.token.all, `{"id":${id},"name":"behind a close"}`) + `DELETE /plants/1 HTTP/1.1\r\nHost: x\r\n\r\n`, { quietMs: 300 });
    const answers = splitResponses(raw);
    assert.deepEqual(answers.map((a) => a.status), [Number(status)], raw);
    assert.equal(answers[0]!.headers['connection'], 'close');
    assert.equal(await storedPlant(s.store, id), undefined, `a request behind the ${status}'s Connection: close was executed`);
  }
});

test('a GET pipelined behind the POST of the same id sees the plant: each request finishes before the next starts (50 pairs)', async (t) => {
  const s = await startApp(t);
  let data = '';
  for (let id = 1; id <= 50; id++) data += post(s.token.all, `{"id":${id},"name":"p${id}"}`) + get(s.token.all, `/plants/${id}`);
  const raw = await rawHttp(s.port, data, { quietMs: 1_000 });
  const answers = splitResponses(raw);
  assert.equal(answers.length, 100, raw.slice(0, 2_000));
  for (let id = 1; id <= 50; id++) {
    const [created, read] = [answers[2 * id - 2]!, answers[2 * id - 1]!];
    assert.equal(created.status, 200, `POST ${id}: ${created.body}`);
    assert.equal(read.status, 200, `GET ${id} ran before the POST ahead of it committed: ${read.body}`);
    assert.deepEqual(JSON.parse(read.body), { id, name: `p${id}` });
  }
});

test('CONNECT is answered 405 with an Error body and the connection closed, not dropped silently', async (t) => {
  const s = await startApp(t);
  for (const target of ['example.com:443', '127.0.0.1:22', '/plants']) {
    const raw = await rawHttp(s.port, `CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\n`, { quietMs: 300 });
    const answers = splitResponses(raw);
    assert.deepEqual(answers.map((a) => a.status), [405], `${target}: ${JSON.stringify(raw)}`);
    const [answer] = answers;
    assert.equal(answer!.headers['connection'], 'close');
    assert.equal(answer!.headers['allow'], '');
    assert.equal(answer!.headers['x-content-type-options'], 'nosniff');
    assert.deepEqual(JSON.parse(answer!.body), { error: 405, message: 'CONNECT is not supported: this service is not a proxy.' });
  }
  // The server goes on serving.
  const res = await fetch(`${s.url}/healthz`);
  assert.equal(res.status, 200);
});
