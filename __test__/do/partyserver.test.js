'use strict';
// partyserver 0.5.10 and partysocket 1.3.0, unchanged, on this host: the
// chat app __test__/fixtures/do-partyserver served by the CLI in a child
// process (as `npx durable-workers serve` runs it), reached by PartySocket
// clients on `ws`. Both of partyserver's socket modes run the same checks:
// party "chat" hibernates (ctx.acceptWebSocket, tags and state kept in the
// socket attachment), party "plain-chat" is the default (accept() +
// listeners; its broadcast needs the iterator helpers the host adds on
// Node 20, js/do/globals.js).
const test = require('ava');
const path = require('node:path');
const WS = require('ws');
const { PartySocket } = require('partysocket');
const { tmpDir } = require('../helpers/tmp');
const { startServe } = require('../helpers/serve-cli');
const { sleep } = require('../helpers/poll');

const APP = path.join(__dirname, '..', 'fixtures', 'do-partyserver');

/** The fixture served on a free port, on this test's own directory; killed when the test ends. */
async function serveChat(t) {
  const s = await startServe(['--config', path.join(APP, 'wrangler.jsonc'), '--dir', path.join(tmpDir(t), 'data'), '--port', '0'], { cwd: APP, t });
  if (s.url === null) throw new Error(`serve exited before it was ready: ${s.stderr()}`);
  return s;
}

/**
 * A PartySocket on `party`/`room`, open. `next()` resolves with the next
 * message (text as is, binary as "binary:<its text>"), `pending()` counts the unread ones. Closed (no reconnect)
 * when the test ends, before the server is killed (teardowns run last-first).
 */
function client(t, url, party, room, o = {}) {
  const socket = new PartySocket({ host: new URL(url).host, party, room, WebSocket: WS, maxRetries: 0, ...o });
  socket.binaryType = 'arraybuffer';
  const queue = [];
  const waiting = [];
  socket.addEventListener('message', (e) => {
    const m = typeof e.data === 'string' ? e.data : `binary:${Buffer.from(e.data).toString()}`;
    if (waiting.length > 0) waiting.shift()(m);
    else queue.push(m);
  });
  socket.next = (ms = 5000) =>
    queue.length > 0
      ? Promise.resolve(queue.shift())
      : new Promise((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error(`${party}/${room}: no message within ${ms} ms`)), ms);
          waiting.push((m) => {
            clearTimeout(timer);
            resolve(m);
          });
        });
  socket.pending = () => queue.length;
  t.teardown(() => socket.close());
  return new Promise((resolve, reject) => {
    socket.addEventListener('open', () => resolve(socket), { once: true });
    socket.addEventListener('error', (e) => reject(new Error(`${party}/${room}: ${e.message ?? 'socket error'}`)), { once: true });
  });
}

/** What the server made of `socket` (the fixture answers "who?" with it). */
async function who(socket) {
  socket.send('who?');
  return JSON.parse(await socket.next());
}

const chat = test.macro(async (t, party) => {
  const s = await serveChat(t);
  const a = await client(t, s.url, party, 'room-1', { id: 'alice', query: { tags: 'x,y' } });
  const b = await client(t, s.url, party, 'room-1');
  const c = await client(t, s.url, party, 'room-2');

  // Ids and tags as partyserver sets them: the id from ?_pk (partysocket's
  // `id`, generated when not given) and first among the tags.
  t.deepEqual(await who(a), { id: 'alice', tags: ['alice', 'x', 'y'], server: 'room-1', state: { joined: true }, name: 'room-1' });
  t.regex(b.id, /^[0-9a-f-]{36}$/);
  t.deepEqual(await who(b), { id: b.id, tags: [b.id], server: 'room-1', state: { joined: true }, name: 'room-1' });
  t.deepEqual(await who(c), { id: c.id, tags: [c.id], server: 'room-2', state: { joined: true }, name: 'room-2' });

  // A's message reaches B only: A's next message is its own "who?" answer,
  // C (another room, another object) gets nothing.
  a.send('hello from A');
  t.is(await b.next(), 'hello from A');
  t.is((await who(a)).id, 'alice');
  b.send(new TextEncoder().encode('bytes from B').buffer);
  t.is(await a.next(), 'binary:bytes from B');
  t.is((await who(c)).id, c.id);
  await sleep(100);
  t.is(a.pending() + b.pending() + c.pending(), 0, 'no message beyond the broadcasts');

  // The object's connections, all and by tag (getWebSockets(tag) when hibernating).
  const info = await (await fetch(`${s.url}/parties/${party}/room-1`)).json();
  t.deepEqual(info.connections.map((x) => x.id).sort(), ['alice', b.id].sort());
  const tagged = await (await fetch(`${s.url}/parties/${party}/room-1?tag=x`)).json();
  t.deepEqual(tagged.connections, [{ id: 'alice', tags: ['alice', 'x', 'y'] }]);

  // getServerByName: the setName RPC carries props to onStart; a name other
  // than the id's is refused, the error crossing the RPC boundary.
  const rpc = await fetch(`${s.url}/rpc/${party}/by-rpc?greeting=hi`);
  t.is(rpc.status, 200);
  t.deepEqual(await rpc.json(), { name: 'by-rpc', props: { greeting: 'hi' }, connections: [] });
  const wrong = await fetch(`${s.url}/rpc-wrong/${party}/by-rpc`);
  t.is(wrong.status, 409);
  t.regex(await wrong.text(), /created for name "by-rpc", cannot setName to "by-rpc-other"/);

  t.is((await fetch(`${s.url}/elsewhere`)).status, 404);
  // Nothing the app or partyserver did threw (their errors go to stderr).
  t.is(s.stderr(), '');
});

test('partyserver chat, hibernating (static options = { hibernate: true })', chat, 'chat');
test('partyserver chat, default (non-hibernating, accept() + listeners)', chat, 'plain-chat');
