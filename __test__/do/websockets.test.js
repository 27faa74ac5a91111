'use strict';
// WebSockets for Durable Objects on this host (js/do/websocket.js,
// hibernation.js, upgrade.js, globals.js): the fixture app
// (__test__/fixtures/do-app) served by `serve()`, reached by real `ws`
// clients; the crash test runs the CLI in a child on the emulated slow device.
//
// In-process tests are serial: `cloudflare:workers` exports one `env` per process.
const test = require('ava');
const fs = require('node:fs');
const path = require('node:path');
const WS = require('ws');
const { tmpDir } = require('../helpers/tmp');
const { startServe, APP } = require('../helpers/serve-cli');
const { slowSyncEnv } = require('../helpers/slowsync');
const { serve } = require('../../js/do/serve');
const { WebSocket, WebSocketPair } = require('../../js/do/websocket');
const { Response: DOResponse } = require('../../js/do/globals');

async function start(t, o = {}) {
  const logged = [];
  const s = await serve({ cwd: APP, dir: o.dir ?? path.join(tmpDir(t), 'data'), port: 0, log: (line) => logged.push(line), ...o });
  t.teardown(() => s.close());
  return { ...s, logged };
}

/**
 * A `ws` client on `url` + `p`, open; `next()` resolves with the next message
 * (text as a string, binary as { binary: Buffer }); `closed` with [code, reason].
 */
function client(t, base, p, protocols) {
  return new Promise((resolve, reject) => {
    const ws = new WS(base.replace(/^http/, 'ws') + p, protocols);
    const queue = [];
    const waiting = [];
    ws.on('message', (data, isBinary) => {
      const m = isBinary ? { binary: Buffer.from(data) } : String(data);
      if (waiting.length > 0) waiting.shift()(m);
      else queue.push(m);
    });
    ws.closed = new Promise((r) => ws.on('close', (code, reason) => r([code, String(reason)])));
    ws.next = (ms = 5000) =>
      queue.length > 0
        ? Promise.resolve(queue.shift())
        : new Promise((r, j) => {
            const timer = setTimeout(() => j(new Error(`no message within ${ms} ms`)), ms);
            waiting.push((m) => {
              clearTimeout(timer);
              r(m);
            });
          });
    ws.pending = () => queue.length;
    ws.on('open', () => resolve(ws));
    ws.on('unexpected-response', (req, res) => reject(new Error(`status ${res.statusCode}`)));
    ws.on('error', reject);
    t.teardown(() => ws.terminate());
  });
}

const cmd = (ws, o) => ws.send(JSON.stringify(o));
const SYNC_MS = 5;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

test('in memory: a pair is two linked ends; sends before accept() are refused, what arrives before it is held; close codes are validated as workerd does', async (t) => {
  const { 0: a, 1: b } = new WebSocketPair();
  t.true(a instanceof WebSocket && a instanceof EventTarget);
  t.is(WebSocket.READY_STATE_OPEN, 1);
  t.is(WebSocket.CLOSED, 3);
  t.is(a.readyState, WebSocket.READY_STATE_CONNECTING);
  t.throws(() => a.send('x'), { instanceOf: TypeError, message: 'You must call one of accept() or state.acceptWebSocket() on this WebSocket before sending messages.' });
  b.accept();
  t.is(b.readyState, WebSocket.READY_STATE_OPEN);
  b.send('early');
  b.send(new Uint8Array([1, 2, 3]));
  Object.assign(b, { id: 'extensible' });
  t.is(b.id, 'extensible');
  const got = [];
  a.addEventListener('message', (ev) => got.push(ev.data));
  await sleep(10);
  t.deepEqual(got, [], 'held until accept()');
  a.accept();
  await sleep(10);
  t.is(got[0], 'early');
  t.true(got[1] instanceof ArrayBuffer);
  t.deepEqual([...new Uint8Array(got[1])], [1, 2, 3]);
  t.throws(() => b.close(999), { instanceOf: TypeError, message: 'Invalid WebSocket close code: 999.' });
  t.throws(() => b.close(1006), { instanceOf: TypeError, message: 'Invalid WebSocket close code: 1006.' });
  t.throws(() => b.close(undefined, 'why'), { instanceOf: TypeError, message: 'If you specify a WebSocket close reason, you must also specify a code.' });
  const closes = [];
  a.addEventListener('close', (ev) => closes.push(['a', ev.code, ev.reason, ev.wasClean]));
  b.addEventListener('close', (ev) => closes.push(['b', ev.code, ev.reason, ev.wasClean]));
  b.close(4001, 'done');
  t.is(b.readyState, WebSocket.READY_STATE_CLOSING);
  t.throws(() => b.send('late'), { instanceOf: TypeError, message: "Can't call WebSocket send() after close()." });
  await sleep(10);
  t.deepEqual(closes, [
    ['a', 4001, 'done', true],
    ['b', 4001, 'done', true],
  ]);
  t.is(a.readyState, WebSocket.READY_STATE_CLOSED);
  t.is(b.readyState, WebSocket.READY_STATE_CLOSED);
  b.serializeAttachment({ n: 1, at: new Date(0) });
  const back = b.deserializeAttachment();
  t.deepEqual(back, { n: 1, at: new Date(0) });
  t.not(back, b.deserializeAttachment(), 'a fresh copy each time');
  t.throws(() => b.serializeAttachment('x'.repeat(20_000)), { instanceOf: RangeError, message: /^A WebSocket 'attachment' cannot be larger than 16384 bytes\.'attachment' was \d+ bytes\.$/ });
});

test('in memory: what was held reaches listeners added right after accept(), in order, before what arrives later', async (t) => {
  const { 0: a, 1: b } = new WebSocketPair();
  b.accept();
  b.send('one');
  b.send('two');
  await sleep(10);
  const got = [];
  a.accept();
  a.addEventListener('message', (ev) => got.push(ev.data));
  b.send('three');
  await sleep(10);
  t.deepEqual(got, ['one', 'two', 'three']);
});

test('flow control: a network socket is paused while more than HIGH of its messages wait for the object, and resumed once they are handled', async (t) => {
  const { couple, HIGH } = require('../../js/do/upgrade');
  const wss = new WS.WebSocketServer({ port: 0, host: '127.0.0.1' });
  t.teardown(() => wss.close());
  await new Promise((r) => wss.once('listening', r));
  const netSide = new Promise((r) => wss.once('connection', r));
  const remote = new WS(`ws://127.0.0.1:${wss.address().port}`);
  t.teardown(() => remote.terminate());
  await new Promise((r) => remote.once('open', r));
  const net = await netSide;
  const { 0: end, 1: object } = new WebSocketPair();
  couple(net, end);
  // The object has not accepted its end: what arrives waits for it.
  for (let i = 0; i < HIGH + 10; i++) remote.send(`m${i}`);
  for (let i = 0; i < 100 && !net.isPaused; i++) await sleep(10);
  t.true(net.isPaused, 'paused above the bound');
  const got = [];
  object.addEventListener('message', (ev) => got.push(ev.data));
  object.accept();
  for (let i = 0; i < 100 && net.isPaused; i++) await sleep(10);
  t.false(net.isPaused, 'resumed once handled');
  await sleep(20);
  t.is(got.length, HIGH + 10);
  t.is(got.at(-1), `m${HIGH + 9}`);
});

test("the global Response takes status 101 with webSocket; Node's own responses stay instanceof it", (t) => {
  const { 0: client } = new WebSocketPair();
  const r = new DOResponse(null, { status: 101, webSocket: client, headers: { 'sec-websocket-protocol': 'p' } });
  t.is(r.status, 101);
  t.false(r.ok);
  t.is(r.webSocket, client);
  t.is(r.headers.get('sec-websocket-protocol'), 'p');
  t.true(r instanceof DOResponse);
  t.true(Response.json({}) instanceof DOResponse);
  t.is(new DOResponse('x').webSocket, null);
  t.throws(() => new DOResponse(null, { status: 101 }), { instanceOf: RangeError });
});

test.serial(
  'standard API room: a message from A reaches B, not A nor a socket of another room; binary arrives as binary; the subprotocol is chosen by the 101; a throwing listener is logged',
  async (t) => {
    const s = await start(t);
    const a = await client(t, s.url, '/room/r1', ['first', 'second']);
    const b = await client(t, s.url, '/room/r1');
    const c = await client(t, s.url, '/room/r2');
    t.is(a.protocol, 'first');
    a.send('hello');
    t.is(await b.next(), 'hello');
    a.send(Buffer.from([0, 1, 2, 255]));
    const bin = await b.next();
    t.deepEqual([...bin.binary], [0, 1, 2, 255]);
    b.send('back');
    t.is(await a.next(), 'back');
    await sleep(50);
    t.is(c.pending(), 0, 'another room hears nothing');
    t.is(a.pending(), 0, 'the sender does not hear itself');
    // A listener that throws is logged; the room goes on.
    a.send('throw');
    a.send('after the throw');
    t.is(await b.next(), 'after the throw');
    t.regex(s.logged.join('\n'), /WebSocket 'message' listener: Error: a listener that throws/);
  },
);

test.serial('hibernation API room: tags, getWebSockets(tag) broadcast, attachments kept between messages, getTags, and workerd errors', async (t) => {
  const s = await start(t);
  const x = await client(t, s.url, '/hib/h?tags=red,blue,red');
  const y = await client(t, s.url, '/hib/h?tags=blue');
  const z = await client(t, s.url, '/hib/h');
  cmd(x, { op: 'broadcast', tag: 'blue', text: 'to blue' });
  t.deepEqual(JSON.parse(await x.next()), { text: 'to blue', to: 'blue' });
  t.deepEqual(JSON.parse(await y.next()), { text: 'to blue', to: 'blue' });
  cmd(y, { op: 'broadcast', tag: 'red', text: 'to red' });
  t.deepEqual(JSON.parse(await x.next()), { text: 'to red', to: 'red' });
  cmd(z, { op: 'broadcast', text: 'to all' });
  for (const w of [x, y, z]) t.deepEqual(JSON.parse(await w.next()), { text: 'to all', to: null });
  await sleep(50);
  t.is(y.pending() + z.pending(), 0, 'only tagged sockets got the tagged broadcasts');

  cmd(x, { op: 'attach', value: { user: 'ann', joined: 7 } });
  t.is(await x.next(), 'attached');
  cmd(x, { op: 'read' });
  t.deepEqual(JSON.parse(await x.next()), { attachment: { user: 'ann', joined: 7 }, tags: ['red', 'blue'], count: 3 });
  cmd(y, { op: 'read' });
  t.deepEqual(JSON.parse(await y.next()), { attachment: null, tags: ['blue'], count: 3 });

  cmd(z, { op: 'errors' });
  t.deepEqual(JSON.parse(await z.next()), [
    'WebSocket was already accepted via `acceptWebSocket()`.',
    'a Hibernatable WebSocket cannot have more than 10 tags',
    "A WebSocket 'attachment' cannot be larger than 16384 bytes.'attachment' was 17006 bytes.",
    'Cannot call `acceptWebSocket()` if the WebSocket was already accepted via `accept()`',
  ]);
  x.send(Buffer.from([9, 8]));
  t.deepEqual([...(await x.next()).binary], [9, 8], 'webSocketMessage gets binary as ArrayBuffer; sent back as binary');
});

test.serial("auto-response: 'ping' is answered 'pong' at the socket without running webSocketMessage, and its time is recorded", async (t) => {
  const s = await start(t);
  const w = await client(t, s.url, '/hib/auto');
  cmd(w, { op: 'stats' });
  t.deepEqual(JSON.parse(await w.next()), { handled: 1, auto: null });
  const before = Date.now();
  w.send('ping');
  t.is(await w.next(), 'pong');
  w.send('ping');
  t.is(await w.next(), 'pong');
  cmd(w, { op: 'stats' });
  const { handled, auto } = JSON.parse(await w.next());
  t.is(handled, 2, 'the two pings never reached the handler');
  t.true(auto >= before - 1 && auto <= Date.now(), 'getWebSocketAutoResponseTimestamp is the last ping');
});

test.serial(
  'close codes: a client close reaches webSocketClose with its code and reason; a server close(1000, "bye") reaches the client; an invalid code is refused with workerd\'s message',
  async (t) => {
    const s = await start(t);
    const a = await client(t, s.url, '/hib/c');
    const b = await client(t, s.url, '/hib/c');
    cmd(a, { op: 'bad-close' });
    t.is(await a.next(), 'TypeError: Invalid WebSocket close code: 999.');
    a.close(4321, 'client leaves');
    t.deepEqual(await a.closed, [4321, 'client leaves'], 'the object answers the close with the same code');
    cmd(b, { op: 'bye' });
    t.deepEqual(await b.closed, [1000, 'bye']);
    let state;
    for (let i = 0; i < 50; i++) {
      state = await (await fetch(`${s.url}/hib-state/c`)).json();
      if (state.closes.length === 2) break;
      await sleep(20);
    }
    t.deepEqual(state.closes, [
      { code: 4321, reason: 'client leaves', wasClean: true },
      { code: 1000, reason: 'bye', wasClean: true },
    ]);

    // The standard API: the same both ways.
    const r = await client(t, s.url, '/room/c');
    r.send('bad-close');
    t.is(await r.next(), 'TypeError: Invalid WebSocket close code: 999.');
    r.send('bye');
    t.deepEqual(await r.closed, [1000, 'bye']);

    // close() of serve closes open sockets with 1001.
    const last = await client(t, s.url, '/room/d');
    await s.close();
    t.deepEqual(await last.closed, [1001, 'server shutting down']);
  },
);

test.serial('a broken object (ctx.abort()) loses its sockets: the client sees 1006; the next connection reaches a fresh instance', async (t) => {
  const s = await start(t);
  const w = await client(t, s.url, '/hib/broken');
  cmd(w, { op: 'abort' });
  t.is((await w.closed)[0], 1006);
  const again = await client(t, s.url, '/hib/broken');
  cmd(again, { op: 'stats' });
  t.deepEqual(JSON.parse(await again.next()), { handled: 1, auto: null });
});

test.serial('new WebSocket(url) is an outgoing client: open, messages both ways, close', async (t) => {
  const s = await start(t);
  const peer = await client(t, s.url, '/room/out');
  const ours = new WebSocket(`${s.url.replace(/^http/, 'ws')}/room/out`);
  t.is(ours.readyState, WebSocket.READY_STATE_CONNECTING);
  await new Promise((r) => ours.addEventListener('open', r, { once: true }));
  t.is(ours.readyState, WebSocket.READY_STATE_OPEN);
  const got = new Promise((r) => ours.addEventListener('message', (ev) => r(ev.data), { once: true }));
  ours.send('from our client');
  t.is(await peer.next(), 'from our client');
  peer.send('to our client');
  t.is(await got, 'to our client');
  const closed = new Promise((r) => ours.addEventListener('close', (ev) => r([ev.code, ev.reason, ev.wasClean]), { once: true }));
  ours.close(1000, 'done');
  t.deepEqual(await closed, [1000, 'done', true]);
});

test.serial("the output gate, against a log: a message sent after a write in the same turn reaches the client only after the write's commit is durable", async (t) => {
  // Every lock on an output gate (the turn's commit, the object's first
  // registration) is held 100 ms longer, and logs when it is released.
  const { OutputGate } = require('../../js/do/turns');
  const lockWhile = OutputGate.prototype.lockWhile;
  const log = [];
  OutputGate.prototype.lockWhile = function (p) {
    return lockWhile.call(
      this,
      p.then(async (v) => {
        await sleep(100);
        log.push('durable');
        return v;
      }),
    );
  };
  t.teardown(() => (OutputGate.prototype.lockWhile = lockWhile));
  const s = await start(t);
  const w = await client(t, s.url, '/hib/og');
  for (const key of ['a', 'b']) {
    log.length = 0;
    cmd(w, { op: 'write', key, value: 1 });
    t.deepEqual(JSON.parse(await w.next()), { wrote: key });
    log.push('received');
    t.true(log.length >= 2 && log.at(-2) === 'durable', `${key}: ${log.join(', ')}`);
  }
  // A message that writes nothing is not held: the auto-response, and a read.
  log.length = 0;
  cmd(w, { op: 'read' });
  await w.next();
  t.deepEqual(log, []);
});

test('the output gate: a message sent after a write leaves only once the write is durable (SIGKILL on receipt, the write is there after restart)', async (t) => {
  t.timeout(120_000);
  const dir = path.join(tmpDir(t), 'data');
  let env = process.env;
  try {
    env = slowSyncEnv(SYNC_MS);
  } catch (err) {
    t.log(`no slow device (${err.message}); the real disk it is`);
  }
  let s = await startServe(['--dir', dir, '--port', '0'], { env, t });
  t.not(s.url, null, s.stderr());
  if (env !== process.env) t.true(fs.readFileSync(`/proc/${s.child.pid}/maps`, 'utf8').includes('slowsync'), 'the server runs on the slow device');
  const ROOMS = 3;
  const KILL_AT = 40;
  const acked = [];
  let killed = false;
  const sockets = await Promise.all(Array.from({ length: ROOMS }, (_, r) => client(t, s.url, `/hib/g${r}`)));
  await Promise.all(
    sockets.map(async (w, r) => {
      // Each write sent once the previous one is acknowledged: one commit
      // each, so an acknowledgement released before its commit landed is
      // caught by the kill that its receipt triggers.
      for (let i = 0; !killed; i++) {
        cmd(w, { op: 'write', key: `${r}:${i}`, value: i });
        let m;
        try {
          m = await w.next(3000);
        } catch {
          return;
        }
        acked.push([r, JSON.parse(m).wrote]);
        if (acked.length === KILL_AT && !killed) {
          killed = true;
          s.child.kill('SIGKILL');
        }
      }
    }),
  );
  t.deepEqual(await s.exited, { code: null, signal: 'SIGKILL' });
  t.true(acked.length >= KILL_AT);
  s = await startServe(['--dir', dir, '--port', '0'], { env, t });
  for (let r = 0; r < ROOMS; r++) {
    const { kv } = await (await fetch(`${s.url}/hib-state/g${r}`)).json();
    t.log(`room ${r}: ${acked.filter(([x]) => x === r).length} acknowledged, ${Object.keys(kv).length} on disk`);
    for (const [room, key] of acked.filter(([x]) => x === r)) t.true(`k:${key}` in kv, `room ${room}: ${key} was acknowledged and is on disk`);
  }
  s.child.kill('SIGTERM');
  await s.exited;
});
