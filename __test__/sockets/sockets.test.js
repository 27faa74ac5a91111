'use strict';
// WebSockets that hibernate: the host holds the socket, not the worker. A
// socket passed to a stub call crosses as a handle; once a worker accepts it,
// the host listens on it for the worker (class and id, not instance), so the
// worker can be evicted with the socket open and the next message
// materializes it and runs webSocketMessage through its mailbox. A send waits
// for the worker's writes so far (the output gate). Attachments and tags live
// with the socket; an auto-response is answered by the host alone.
//
// Everything here is real: a node:http server with `ws` (noServer + upgrade)
// on 127.0.0.1, `ws` clients, and for the gate a server process that is
// SIGKILLed the moment its client hears back. Timing is only ever waited on
// with generous deadlines: machines running these tests are shared and noisy.
const test = require('ava');
const http = require('node:http');
const path = require('node:path');
const crypto = require('node:crypto');
const { fork } = require('node:child_process');
const { once } = require('node:events');
const { WebSocket } = require('ws');
const { open } = require('../..');
const { Room, Ledger, record } = require('../fixtures/socket-workers');
const { serve } = require('../fixtures/socket-server');
const { tmpDir } = require('../helpers/tmp');
const { slowSyncEnv } = require('../helpers/slowsync');
const { startChat } = require('../../examples/chat/server');

const CHILD = path.join(__dirname, '..', 'fixtures', 'socket-child.js');
const SYNC_MS = 5;
/** Deadline for anything expected to happen "soon". */
const SOON = 20_000;

const { sleep, until } = require('../helpers/poll');
const range = (from, to) => Array.from({ length: to - from }, (_, i) => from + i);

/** What the fixture's hooks recorded for room `id` (ids are unique across this file). */
const recorded = (id, ev) => record.log.filter((e) => e.id === id && (ev === undefined || e.ev === ev));
const brief = (id) => JSON.stringify(recorded(id)).slice(-3000);

async function openHost(t, options = {}) {
  const host = await open({ dir: tmpDir(t), ...options });
  t.teardown(() => host.close());
  return host;
}

/**
 * A server for `host` where ws://…/<room>/<user>[?tags=a,b | ?notags] joins
 * Room <room> as <user>: join(ws, user) with the default tags ['user:<user>'],
 * the given ones, or none.
 */
async function roomServer(t, host) {
  const server = await serve((ws, [room, user], url) => {
    const q = url.searchParams;
    const tags = q.has('notags') ? null : q.has('tags') ? q.get('tags').split(',') : undefined;
    return host.get(Room, room).join(ws, user, tags);
  });
  t.teardown(() => server.close());
  return server;
}

/**
 * A `ws` client. Messages collect in `inbox` (text as strings, binary as
 * { binary: Buffer }); `next()` takes them in order; `closed` resolves with
 * { code, reason } when the connection ends.
 */
function client(t, url) {
  const ws = new WebSocket(url);
  const inbox = [];
  const errors = [];
  let read = 0;
  let ended = null;
  ws.on('message', (data, isBinary) => inbox.push(isBinary ? { binary: Buffer.from(data) } : data.toString()));
  ws.on('error', (err) => errors.push(err));
  const closed = new Promise((resolve) => {
    ws.on('close', (code, reason) => resolve((ended = { code, reason: reason.toString() })));
  });
  t.teardown(() => ws.terminate());
  const tell = () => `inbox ${JSON.stringify(inbox).slice(-2000)}; closed ${JSON.stringify(ended)}; errors ${errors.map((e) => e.message)}`;
  const c = {
    ws,
    inbox,
    closed,
    tell,
    send: (data) => ws.send(data),
    /** The next message not yet taken. */
    async next(what = 'a message') {
      await until(
        () => {
          if (read < inbox.length) return true;
          if (ended !== null) throw new Error(`the connection closed while waiting for ${what}: ${tell()}`);
          return false;
        },
        SOON,
        () => `${what}; ${tell()}`,
      );
      return inbox[read++];
    },
    async json(what) {
      return JSON.parse(await c.next(what));
    },
    /** The next `n` messages. */
    async take(n, what = `${n} messages`) {
      await until(
        () => {
          if (read + n <= inbox.length) return true;
          if (ended !== null) throw new Error(`the connection closed while waiting for ${what}: ${tell()}`);
          return false;
        },
        SOON,
        () => `${what}; ${tell()}`,
      );
      const got = inbox.slice(read, read + n);
      read += n;
      return got;
    },
  };
  return c;
}

/** Connects as `user` to `room` and waits for the worker's greeting (sent once it has accepted the socket). */
async function join(t, server, room, user, query = '') {
  const c = client(t, server.url(`/${encodeURIComponent(room)}/${encodeURIComponent(user)}${query}`));
  c.welcome = await c.json(`the welcome of ${user} to ${room} (server failures: ${server.failures.map((e) => e.stack)})`);
  return c;
}

/** Resolves when `host` emits 'evicted' for Room `id`. */
function evicted(host, id) {
  return new Promise((resolve) => {
    const on = (e) => {
      if (e.class === 'Room' && e.id === id) {
        host.off('evicted', on);
        resolve(e);
      }
    };
    host.on('evicted', on);
  });
}

async function withDeadline(p, ms, what) {
  let timer;
  try {
    return await Promise.race([p, new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

// --- through a worker ---------------------------------------------------------

test('a socket passed to a stub call reaches the worker as an open handle, and text and binary frames go both ways through the worker', async (t) => {
  t.timeout(60_000);
  const host = await openHost(t);
  const server = await roomServer(t, host);
  const ada = await join(t, server, 'echo-1', 'ada');
  t.deepEqual(ada.welcome, { welcome: 'ada', room: 'echo-1', readyState: 1, attachment: null }, 'open (readyState 1), no attachment before one is set');
  t.is(host.stats().sockets, 1);

  ada.send('hello');
  t.deepEqual(await ada.json('the echo'), { room: 'echo-1', echo: 'hello', user: 'ada', tags: ['user:ada'], starts: 1, listed: true });
  const [text] = recorded('echo-1', 'message');
  t.like(text, { data: 'hello', type: 'string', isBuffer: false }, 'a text frame arrives as a string');

  const bytes = Buffer.from([0, 1, 2, 250, 255]);
  ada.send(bytes);
  const back = await ada.next('the binary echo');
  t.truthy(back.binary, `a binary frame sent by the worker arrives as binary, got ${JSON.stringify(back)}`);
  t.deepEqual(back.binary, bytes);
  t.like(recorded('echo-1', 'message')[1], { data: { hex: bytes.toString('hex') }, isBuffer: true }, 'a binary frame arrives as a Buffer');

  t.is(await host.get(Room, 'echo-1').broadcast('to everyone'), 1, 'a call sees the socket through getWebSockets()');
  t.is(await ada.next('the broadcast'), 'to everyone');
  t.deepEqual(server.failures, []);
});

test('a worker evicted while its socket stays open is materialized by the next message, with the attachment, tags and handle the socket had', async (t) => {
  t.timeout(60_000);
  const host = await openHost(t, { maxLive: 1 });
  const server = await roomServer(t, host);
  const ada = await join(t, server, 'ev-a', 'ada', '?tags=user:ada,role:host');
  const room = host.get(Room, 'ev-a');
  t.deepEqual(await room.attach('user:ada', { user: 'ada', since: new Date(5), seen: new Map([['x', 1]]) }), [
    { outcome: 'ok', after: { user: 'ada', since: new Date(5), seen: new Map([['x', 1]]) } },
  ]);
  t.is(await room.sameHandle('user:ada'), null, 'the handle is noted');

  const gone = evicted(host, 'ev-a');
  const bob = await join(t, server, 'ev-b', 'bob');
  await withDeadline(gone, SOON, 'ev-a to be evicted by ev-b');
  t.is(host.stats().live, 1);
  t.is(host.stats().sockets, 2, 'eviction leaves the socket open');
  const materialized = host.stats().materialized;

  ada.send('after eviction');
  t.deepEqual(await ada.json('the reply from the rematerialized ev-a'), {
    room: 'ev-a',
    echo: 'after eviction',
    user: 'ada',
    tags: ['user:ada', 'role:host'],
    starts: 2,
    listed: true,
  });
  t.deepEqual(
    recorded('ev-a', 'start').map((e) => e.starts),
    [1, 2],
    'start() ran on the new instance before webSocketMessage',
  );
  t.is(record.log.filter((e) => e.id === 'ev-a' && (e.ev === 'start' || e.ev === 'message')).at(-1).ev, 'message');
  t.is(host.stats().materialized, materialized + 1);
  t.deepEqual(await room.who('user:ada'), [{ user: 'ada', tags: ['user:ada', 'role:host'], readyState: 1 }]);
  t.deepEqual(await room.attachments('role:host'), [{ user: 'ada', since: new Date(5), seen: new Map([['x', 1]]) }], 'the whole attachment survived');
  t.is(await room.sameHandle('user:ada'), true, 'getWebSockets() gives the same handle object across instances');

  bob.send('still here');
  t.like(await bob.json('the reply from ev-b'), { room: 'ev-b', user: 'bob', starts: 2 }, 'ev-b was evicted by ev-a in turn and came back');
  t.deepEqual(server.failures, []);
});

test('the messages on one socket reach webSocketMessage in the order sent, one at a time with calls, and its sends leave in the order made', async (t) => {
  t.timeout(120_000);
  const N = 500;
  const CALLS = 50;
  const host = await openHost(t);
  const server = await roomServer(t, host);
  const ada = await join(t, server, 'order-1', 'ada');
  const room = host.get(Room, 'order-1');

  const calls = [];
  for (let i = 0; i < N; i++) {
    ada.send(`/seq ${i}`);
    if (i % (N / CALLS) === 0) calls.push(room.touch(i));
  }
  t.deepEqual(
    await Promise.all(calls),
    range(0, CALLS).map((k) => (k * N) / CALLS),
  );
  const got = await ada.take(2 * N, `${2 * N} replies`);
  t.deepEqual(
    got,
    range(0, N).flatMap((i) => [`pre ${i}`, `ack ${i}`]),
    'each message sends "pre n" then, after a write, "ack n"; all of them arrive in that order',
  );
  t.deepEqual(
    recorded('order-1', 'message').map((e) => e.data),
    range(0, N).map((i) => `/seq ${i}`),
    'webSocketMessage saw the messages in the order sent',
  );
  t.deepEqual(recorded('order-1', 'overlap'), [], 'no hook or call ran while another was between its awaits');
  t.is(recorded('order-1', 'call').length, CALLS);
  t.is(await room.last(), N - 1);
});

test('a reply a worker sends after a write leaves only once the write is durable: with the server SIGKILLed as the client receives it, the write is there on reopen', async (t) => {
  t.timeout(180_000);
  // Lockstep: the client sends n + 1 when it hears "saved n", so the reply
  // to K is the newest write when the kill lands. Without the gate it would
  // leave while that write's commit (slowed to SYNC_MS per sync) is in flight.
  const K = 15;
  const RUNS = 3;
  for (let run = 0; run < RUNS; run++) {
    const dir = tmpDir(t);
    const child = fork(CHILD, [dir], { env: slowSyncEnv(SYNC_MS), stdio: ['ignore', 'ignore', 'pipe', 'ipc'] });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (s) => (stderr += s));
    const ended = Promise.all([once(child, 'exit'), once(child.stderr, 'end')]).then(([[code, signal]]) => ({ code, signal }));
    t.teardown(async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await ended;
    });
    const hello = await withDeadline(
      Promise.race([once(child, 'message').then(([m]) => m), ended.then((s) => Promise.reject(new Error(`the child ended (${s.code ?? s.signal}): ${stderr}`)))]),
      60_000,
      'the child to listen',
    );
    t.true(hello.preloaded, 'the child runs under the slow-sync shim');

    const ws = new WebSocket(`ws://127.0.0.1:${hello.port}/`);
    t.teardown(() => ws.terminate());
    ws.on('error', () => {}); // the connection dies with the child
    let acked = 0;
    const replies = [];
    ws.on('message', (data) => {
      const text = data.toString();
      replies.push(text);
      if (text === 'ready') return void ws.send('1');
      const n = Number(text.slice('saved '.length));
      acked = Math.max(acked, n);
      if (n === K) child.kill('SIGKILL');
      else ws.send(String(n + 1));
    });
    const { signal } = await withDeadline(ended, 60_000, `the child to be killed; replies ${replies}; stderr ${stderr}`);
    t.is(signal, 'SIGKILL', stderr);
    t.is(acked, K, `replies ${replies}`);

    const host = await open({ dir });
    try {
      const saved = await host.get(Ledger, 'ledger').saved();
      t.deepEqual(saved, range(1, K + 1), `run ${run}: "saved ${K}" was received, and the disk holds ${JSON.stringify(saved)}`);
    } finally {
      await host.close();
    }
  }
});

// --- auto-response -----------------------------------------------------------

test('a message equal to the auto-response request is answered by the host without materializing the worker; any other text still reaches it', async (t) => {
  t.timeout(60_000);
  const host = await openHost(t, { maxLive: 1 });
  const server = await roomServer(t, host);
  const ada = await join(t, server, 'ar-a', 'ada');
  await host.get(Room, 'ar-a').autoRespond({ request: 'ping', response: 'pong' });
  const gone = evicted(host, 'ar-a');
  await join(t, server, 'ar-b', 'bob');
  await withDeadline(gone, SOON, 'ar-a to be evicted by ar-b');

  const before = host.stats();
  for (let i = 0; i < 5; i++) ada.send('ping');
  t.deepEqual(await ada.take(5, 'five pongs'), ['pong', 'pong', 'pong', 'pong', 'pong']);
  const after = host.stats();
  t.is(after.materialized, before.materialized, 'no worker was materialized');
  t.is(after.autoResponses - before.autoResponses, 5);
  t.deepEqual(recorded('ar-a', 'message'), [], 'webSocketMessage never ran');
  t.is(recorded('ar-a', 'start').length, 1, 'start() ran once, at the join');

  ada.send('ping ');
  t.like(await ada.json('the echo of "ping "'), { room: 'ar-a', echo: 'ping ', starts: 2 }, 'only the exact text is answered by the host');
  t.is(host.stats().autoResponses, after.autoResponses);

  await host.get(Room, 'ar-a').autoRespond(null);
  ada.send('ping');
  t.like(await ada.json('the echo of "ping" once cleared'), { room: 'ar-a', echo: 'ping' }, 'null clears the auto-response');
  t.is(host.stats().autoResponses, after.autoResponses);
});

// --- close and error ------------------------------------------------------------

test('a client closing its socket runs webSocketClose with its code and reason, and the socket leaves getWebSockets() and stats().sockets', async (t) => {
  t.timeout(60_000);
  const host = await openHost(t);
  const server = await roomServer(t, host);
  const ada = await join(t, server, 'close-1', 'ada');
  await join(t, server, 'close-1', 'bob');
  t.is(host.stats().sockets, 2);

  ada.ws.close(4000, 'bye');
  const [closed] = await until(
    () => recorded('close-1', 'close').length > 0 && recorded('close-1', 'close'),
    SOON,
    () => `webSocketClose; ${brief('close-1')}`,
  );
  t.like(closed, { code: 4000, reason: 'bye', reasonType: 'string', wasClean: true, user: 'ada' });
  t.deepEqual(await ada.closed, { code: 4000, reason: 'bye' });
  t.deepEqual(await host.get(Room, 'close-1').who(), [{ user: 'bob', tags: ['user:bob'], readyState: 1 }]);
  t.is(host.stats().sockets, 1);
});

test("a client's close reaches a worker that was evicted, on a new instance", async (t) => {
  t.timeout(60_000);
  const host = await openHost(t, { maxLive: 1 });
  const server = await roomServer(t, host);
  const ada = await join(t, server, 'close-ev-a', 'ada');
  const gone = evicted(host, 'close-ev-a');
  await join(t, server, 'close-ev-b', 'bob');
  await withDeadline(gone, SOON, 'close-ev-a to be evicted');

  ada.ws.close(4001, 'later');
  const [closed] = await until(
    () => recorded('close-ev-a', 'close').length > 0 && recorded('close-ev-a', 'close'),
    SOON,
    () => `webSocketClose; ${brief('close-ev-a')}`,
  );
  t.like(closed, { code: 4001, reason: 'later', wasClean: true, user: 'ada', starts: 2 });
  t.is(host.stats().sockets, 1);
});

test('a worker closes a socket with ws.close(code, reason) and the client sees that code and reason', async (t) => {
  t.timeout(60_000);
  const host = await openHost(t);
  const server = await roomServer(t, host);
  const ada = await join(t, server, 'close-2', 'ada');
  ada.send('/close 4002 done here');
  t.deepEqual(await withDeadline(ada.closed, SOON, 'the close'), { code: 4002, reason: 'done here' });
  await until(
    () => host.stats().sockets === 0,
    SOON,
    () => `stats().sockets to be 0, is ${host.stats().sockets}`,
  );
  t.deepEqual(await host.get(Room, 'close-2').who(), []);
});

test('a protocol error on a socket runs webSocketError with the error, then webSocketClose as an unclean close', async (t) => {
  t.timeout(60_000);
  const host = await openHost(t);
  const server = await roomServer(t, host);
  // A raw client: the handshake by hand, then a frame a client must never
  // send (unmasked), which the server side of `ws` reports as an error.
  const socket = await new Promise((resolve, reject) => {
    const req = http.request({
      host: '127.0.0.1',
      port: server.port,
      path: '/err-1/raw',
      headers: {
        Connection: 'Upgrade',
        Upgrade: 'websocket',
        'Sec-WebSocket-Key': crypto.randomBytes(16).toString('base64'),
        'Sec-WebSocket-Version': '13',
      },
    });
    req.on('upgrade', (res, sock, head) => {
      sock.received = [head];
      sock.on('data', (d) => sock.received.push(d));
      resolve(sock);
    });
    req.on('response', (res) => reject(new Error(`no upgrade: HTTP ${res.statusCode}`)));
    req.on('error', reject);
    req.end();
  });
  t.teardown(() => socket.destroy());
  socket.on('error', () => {});
  // The greeting is sent only once the worker has accepted the socket.
  await until(() => Buffer.concat(socket.received).includes('"welcome":"raw"'), SOON, 'the welcome');
  socket.write(Buffer.from([0x81, 0x02, 0x68, 0x69])); // FIN + text, no MASK bit, "hi"

  const [failed] = await until(
    () => recorded('err-1', 'error').length > 0 && recorded('err-1', 'error'),
    SOON,
    () => `webSocketError; ${brief('err-1')}`,
  );
  t.is(typeof failed.message, 'string');
  t.true(failed.code === 'WS_ERR_EXPECTED_MASK' || failed.causeCode === 'WS_ERR_EXPECTED_MASK', `the error is the one ws reported (or carries it as its cause): ${JSON.stringify(failed)}`);
  t.is(failed.user, 'raw');
  socket.destroy();
  const [closed] = await until(
    () => recorded('err-1', 'close').length > 0 && recorded('err-1', 'close'),
    SOON,
    () => `webSocketClose; ${brief('err-1')}`,
  );
  t.like(closed, { wasClean: false, user: 'raw' });
  t.deepEqual(
    recorded('err-1')
      .map((e) => e.ev)
      .filter((ev) => ev === 'error' || ev === 'close'),
    ['error', 'close'],
  );
  t.deepEqual(recorded('err-1', 'message'), [], 'the bad frame is not a message');
  await until(
    () => host.stats().sockets === 0,
    SOON,
    () => `stats().sockets to be 0, is ${host.stats().sockets}`,
  );
});

// --- tags and attachments ------------------------------------------------------

test('getWebSockets(tag) gives the open sockets accepted with that tag, and getTags(ws) the tags each was accepted with', async (t) => {
  t.timeout(60_000);
  const host = await openHost(t);
  const server = await roomServer(t, host);
  await join(t, server, 'tags-1', 'ada', '?tags=user:ada,team:red');
  const bob = await join(t, server, 'tags-1', 'bob', '?tags=user:bob,team:red');
  await join(t, server, 'tags-1', 'ada', '?tags=user:ada,team:blue');
  await join(t, server, 'tags-1', 'cy', '?notags');
  await join(t, server, 'tags-2', 'dee');
  const room = host.get(Room, 'tags-1');
  const byTags = (list) => list.map((s) => `${s.user} ${s.tags.join(',')}`).sort();

  t.deepEqual(byTags(await room.who()), ['ada user:ada,team:blue', 'ada user:ada,team:red', 'bob user:bob,team:red', 'cy '], "every open socket of this worker, and no other worker's");
  t.deepEqual(byTags(await room.who('user:ada')), ['ada user:ada,team:blue', 'ada user:ada,team:red']);
  t.deepEqual(byTags(await room.who('team:red')), ['ada user:ada,team:red', 'bob user:bob,team:red']);
  t.deepEqual(await room.who('user:dee'), [], "another worker's tag matches nothing here");
  t.deepEqual(await room.who('nobody'), []);
  t.is(host.stats().sockets, 5);

  bob.ws.close(1000);
  await until(
    () => recorded('tags-1', 'close').length > 0,
    SOON,
    () => `webSocketClose; ${brief('tags-1')}`,
  );
  t.deepEqual(byTags(await room.who('team:red')), ['ada user:ada,team:red'], 'a closed socket is no longer listed');
  t.is(host.stats().sockets, 4);
});

test('an attachment is a structured clone kept with the socket; past 16 KiB, or uncloneable, serializeAttachment throws and the old one stays', async (t) => {
  t.timeout(60_000);
  const host = await openHost(t);
  const server = await roomServer(t, host);
  await join(t, server, 'att-1', 'ada');
  const room = host.get(Room, 'att-1');

  t.deepEqual(await room.attach('user:ada', { text: 20_000 }), [{ outcome: 'ERR_DURABLE_STATE_TOO_LARGE', after: { user: 'ada' } }]);
  t.deepEqual(await room.attach('user:ada', 'function'), [{ outcome: 'ERR_DURABLE_UNCLONEABLE', after: { user: 'ada' } }]);
  t.deepEqual(await room.attach('user:ada', { text: 15_000 }), [{ outcome: 'ok', after: '15000 characters' }], 'under 16 KiB encoded is kept');
  t.deepEqual(await room.attach('user:ada', { text: 17_000 }), [{ outcome: 'ERR_DURABLE_STATE_TOO_LARGE', after: '15000 characters' }]);
  const rich = { at: new Date(0), tags: new Set(['a']), nested: { list: [1, 2n, null] } };
  t.deepEqual(await room.attach('user:ada', rich), [{ outcome: 'ok', after: rich }], 'a Date stays a Date, a Set a Set');
});

// --- the host ----------------------------------------------------------------

test('host.close() closes every accepted socket with 1001', async (t) => {
  t.timeout(60_000);
  const host = await openHost(t, { maxLive: 1 });
  const server = await roomServer(t, host);
  const ada = await join(t, server, 'bye-a', 'ada');
  const bob = await join(t, server, 'bye-b', 'bob');
  t.is(host.stats().sockets, 2);
  await host.close();
  const [a, b] = await withDeadline(Promise.all([ada.closed, bob.closed]), SOON, 'both sockets to close');
  t.is(a.code, 1001);
  t.is(b.code, 1001);
});

// --- examples/chat -------------------------------------------------------------

test('examples/chat: a client joining gets the room history, what anyone says reaches everyone in the room and no one outside it, and history outlives a restart', async (t) => {
  t.timeout(120_000);
  const dir = tmpDir(t);
  let chat = await startChat({ dir, port: 0 });
  t.teardown(() => chat.close());
  let base = chat.url.replace(/^http/, 'ws');
  const connect = (room, name) => client(t, `${base}/rooms/${encodeURIComponent(room)}?name=${encodeURIComponent(name)}`);
  /** The next event of `type` (skipping others). */
  const nextOf = async (c, type) => {
    for (;;) {
      const ev = JSON.parse(await c.next(`a ${type} event`));
      if (ev.type === type) return ev;
    }
  };

  const ada = connect('lobby', 'ada');
  t.like(await nextOf(ada, 'history'), { room: 'lobby', messages: [] });
  ada.send('hello, is anyone here?');
  t.like(await nextOf(ada, 'message'), { from: 'ada', text: 'hello, is anyone here?' }, 'the sender hears its own message');

  const bob = connect('lobby', 'bob');
  const history = await nextOf(bob, 'history');
  t.deepEqual(
    history.messages.map((m) => [m.from, m.text]),
    [['ada', 'hello, is anyone here?']],
  );
  t.like(await nextOf(ada, 'joined'), { name: 'bob', present: ['ada', 'bob'] });

  const cy = connect('elsewhere', 'cy');
  t.like(await nextOf(cy, 'history'), { room: 'elsewhere', messages: [] });

  bob.send('hi ada');
  for (const c of [ada, bob]) t.like(await nextOf(c, 'message'), { from: 'bob', text: 'hi ada' });
  ada.send('ping');
  t.is(await ada.next('the pong'), 'pong', 'ping is answered by the host');
  cy.send('anyone?');
  t.like(await nextOf(cy, 'message'), { from: 'cy', text: 'anyone?' });
  await sleep(200);
  t.false(
    [...ada.inbox, ...bob.inbox].some((m) => typeof m === 'string' && m.includes('anyone?')),
    'a message in one room does not reach another',
  );

  await chat.close();
  for (const c of [ada, bob, cy]) t.is((await withDeadline(c.closed, SOON, 'the socket to close')).code, 1001, 'closing the server says "going away"');

  chat = await startChat({ dir, port: 0 });
  base = chat.url.replace(/^http/, 'ws');
  const back = connect('lobby', 'ada');
  t.deepEqual(
    (await nextOf(back, 'history')).messages.map((m) => [m.from, m.text]),
    [
      ['ada', 'hello, is anyone here?'],
      ['bob', 'hi ada'],
    ],
    'the history is on disk',
  );
});
