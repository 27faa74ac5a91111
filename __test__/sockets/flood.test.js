'use strict';
// A flood of WebSocket frames at one worker: no frame is dropped, none is
// handled out of order, and the host stops reading the worker's sockets while
// its mailbox is full, so the flood waits in TCP buffers and at the client
// (whose bufferedAmount grows), not in the server's heap.
const test = require('ava');
const { once } = require('node:events');
const { WebSocket } = require('ws');
const { open, DurableWorker } = require('../..');
const { serve } = require('../fixtures/socket-server');
const { tmpDir } = require('../helpers/tmp');
const { until } = require('../helpers/poll');

const seen = [];

class Sink extends DurableWorker {
  join(ws) {
    this.ctx.acceptWebSocket(ws);
  }

  async webSocketMessage(ws, data) {
    // A slow consumer: a commit per frame, and a pause.
    this.state.set('last', data.length);
    await new Promise((r) => setTimeout(r, 1));
    seen.push(Number(data.slice(0, 8)));
  }
}

test('a flood past the mailbox pauses the sockets instead of queueing without bound; nothing is lost or reordered', async (t) => {
  t.timeout(120_000);
  const host = await open({ dir: tmpDir(t), mailbox: 8 });
  t.teardown(() => host.close());
  const server = await serve((ws) => host.get(Sink, 'sink').join(ws));
  t.teardown(() => server.close());
  const ws = new WebSocket(server.url('/sink'));
  t.teardown(() => ws.terminate());
  await once(ws, 'open');
  await until(() => host.stats().sockets === 1, 20_000, 'the socket accepted');

  // 24 MB: more than the kernel's socket buffers hold, so a server that kept
  // reading would have taken it all into its heap within moments.
  const N = 3000;
  const pad = 'x'.repeat(8000);
  for (let i = 0; i < N; i++) ws.send(String(i).padStart(8, '0') + pad);
  await new Promise((r) => setTimeout(r, 500));
  const waiting = ws.bufferedAmount;
  t.true(waiting > 4_000_000, `after 0.5 s, ${waiting} bytes still wait at the client`);
  t.true(seen.length < N / 2);
  await until(
    () => seen.length === N,
    100_000,
    () => `${seen.length} of ${N} frames handled`,
  );
  t.deepEqual(
    seen,
    Array.from({ length: N }, (_, i) => i),
    'every frame, in order',
  );
  t.true(host.stats().socketPauses >= 1, 'the worker’s sockets were paused');
});
