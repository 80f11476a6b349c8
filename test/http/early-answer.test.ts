import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { startApp } from '../helpers/app.js';

// An answer sent before the body arrived (here a 401) must close the connection: otherwise the rest of
// the body would be read as a next request, or a request timeout would send a second, unrequested answer.
test('a 401 sent before the body arrived closes the connection and is the only answer', async (t) => {
  const s = await startApp(t, { config: { requestTimeoutMs: 1_000, headersTimeoutMs: 1_000 } });
  const received = await new Promise<string>((resolve, reject) => {
    const socket = connect(s.port, '127.0.0.1');
    let data = '';
    socket.on('data', (d) => (data += d.toString('latin1')));
    socket.on('close', () => resolve(data));
    socket.on('error', reject);
    socket.write('POST /plants HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"id":');
    setTimeout(() => socket.destroy(), 3_000);
  });
  const answers = received.match(/^HTTP\/1\.1 \d{3}/gm) ?? [];
  assert.deepEqual(answers, ['HTTP/1.1 401'], received);
  assert.match(received, /\r\nconnection: close\r\n/i);
  assert.match(received, /\{"error":401,"message":"[^"]+"\}/);
});
