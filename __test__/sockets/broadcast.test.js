'use strict';
// ctx.broadcast: one gate wait, then every matching socket of the worker, in
// order. Real `ws` clients against a real server, in process and on shards;
// the gate under SIGKILL in a child process with every sync slowed.
const test = require('ava');
const path = require('node:path');
const { fork } = require('node:child_process');
const { once } = require('node:events');
const { WebSocket } = require('ws');
const { open } = require('../..');
const { Hall } = require('../fixtures/broadcast-workers');
const { serve } = require('../fixtures/socket-server');
const { tmpDir } = require('../helpers/tmp');
const { slowSyncEnv } = require('../helpers/slowsync');
const { until, sleep } = require('../helpers/poll');

const FIXTURE = path.join(__dirname, '..', 'fixtures', 'broadcast-workers.js');
const CHILD = path.join(__dirname, '..', 'fixtures', 'broadcast-child.js');

/** A `ws` client whose messages collect in `inbox` (binary as { binary: text }). */
function client(t, url) {
  const ws = new WebSocket(url);
  const inbox = [];
  ws.on('message', (data, isBinary) => inbox.push(isBinary ? { binary: data.toString() } : data.toString()));
  ws.on('error', () => {});
  t.teardown(() => ws.terminate());
  return { ws, inbox };
}

async function hall(t, options = {}) {
  const host = await open({ dir: tmpDir(t), ...options });
  t.teardown(() => host.close());
  const server = await serve((ws, [user], url) => host.get(Hall, 'hall').join(ws, user, url.searchParams.get('tags')?.split(',') ?? []));
  t.teardown(() => server.close());
  const users = {};
  const connect = async (user, tags) => {
    const c = client(t, server.url(`/${user}${tags ? `?tags=${tags}` : ''}`));
    await until(() => c.inbox.length > 0, 20_000, `the welcome of ${user}`);
    c.inbox.shift();
    users[user] = c;
  };
  return { host, users, connect, stub: host.get(Hall, 'hall') };
}

for (const where of ['in process', 'on a shard']) {
  const options = where === 'on a shard' ? { shards: { count: 1, module: FIXTURE } } : {};

  test(`${where}: a broadcast reaches exactly the sockets it matches (all, any of the tags, not those excepted) and says how many`, async (t) => {
    const { users, connect, stub } = await hall(t, options);
    await connect('ann', 'user:ann,red');
    await connect('bob', 'user:bob,blue');
    await connect('cy', 'user:cy,red,blue');
    await connect('dee', 'user:dee');
    t.is(await stub.say('to all'), 4);
    t.is(await stub.say('to red', ['red']), 2);
    t.is(await stub.say('to red or blue', ['red', 'blue']), 3);
    t.is(await stub.say('to all but ann', undefined, ['ann']), 3);
    t.is(await stub.say('to nobody', ['green']), 0);
    await until(() => users.cy.inbox.length === 4 && users.dee.inbox.length === 2, 20_000, 'the broadcasts');
    await sleep(100); // anything misrouted would have arrived by now
    t.deepEqual(users.ann.inbox, ['1 to all', '2 to red', '3 to red or blue']);
    t.deepEqual(users.bob.inbox, ['1 to all', '3 to red or blue', '4 to all but ann']);
    t.deepEqual(users.cy.inbox, ['1 to all', '2 to red', '3 to red or blue', '4 to all but ann']);
    t.deepEqual(users.dee.inbox, ['1 to all', '4 to all but ann']);
  });

  test(`${where}: one socket sees broadcasts in order with its own sends, and binary goes as binary`, async (t) => {
    const { users, connect, stub } = await hall(t, options);
    await connect('ann', 'user:ann');
    await connect('bob', 'user:bob');
    await stub.interleave('ann');
    await until(() => users.ann.inbox.length === 4 && users.bob.inbox.length === 2, 20_000, 'the messages');
    t.deepEqual(users.ann.inbox, ['direct 1', 'everyone', 'direct 2', { binary: 'binary to all' }]);
    t.deepEqual(users.bob.inbox, ['everyone', { binary: 'binary to all' }]);
  });

  test(`${where}: an abandoned instance can neither broadcast nor send`, async (t) => {
    const { users, connect, host } = await hall(t, { ...options, callTimeout: 100 });
    await connect('ann', 'user:ann');
    Hall.refused.length = 0;
    await t.throwsAsync(host.get(Hall, 'hall').late(300), { code: 'ERR_DURABLE_TIMEOUT' });
    if (where === 'in process') {
      await until(() => Hall.refused.length === 2, 5000, 'the abandoned instance to try');
      t.deepEqual(Hall.refused, ['ERR_DURABLE_RESET', 'ERR_DURABLE_RESET']);
    } else {
      await sleep(500); // the shard's instance tries; what it records stays on the shard
    }
    t.deepEqual(users.ann.inbox, [], 'nothing the abandoned instance sent arrived');
    t.is(await host.get(Hall, 'hall').count(), 0);
  });
}

test('broadcast checks its arguments', async (t) => {
  const { host } = await hall(t);
  const s = host.get(Hall, 'hall');
  t.regex(await s.tryBroadcast(42), /^TypeError {2}Hall "hall": broadcast\(message\) takes a string, an ArrayBuffer or a typed array/);
  t.regex(await s.tryBroadcast('x', { tags: 'red' }), /ERR_DURABLE_NAME Hall "hall": broadcast\(\): tags must be an array of strings/);
  t.regex(await s.tryBroadcast('x', { tag: ['red'] }), /^TypeError {2}Hall "hall": broadcast\(\): unknown option tag/);
  t.is(await s.tryBroadcast('x', { tags: [] }), 0);
});

test('a broadcast leaves only once the write before it is durable: SIGKILLed as a client receives it, the write is there on reopen', async (t) => {
  t.timeout(120_000);
  const K = 12;
  for (let run = 0; run < 3; run++) {
    const dir = tmpDir(t);
    const child = fork(CHILD, [dir], { env: slowSyncEnv(5), stdio: ['ignore', 'ignore', 'pipe', 'ipc'] });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (s) => (stderr += s));
    const ended = once(child, 'exit');
    t.teardown(() => child.exitCode === null && child.signalCode === null && child.kill('SIGKILL'));
    const [hello] = await Promise.race([once(child, 'message'), ended.then(([code]) => Promise.reject(new Error(`child exited ${code}: ${stderr}`)))]);
    t.true(hello.preloaded, 'the child runs under the slow-sync shim');
    const clients = ['a', 'b', 'c'].map((u) => client(t, `ws://127.0.0.1:${hello.port}/${u}`));
    await until(() => clients.every((c) => c.inbox.length === 1), 20_000, 'the welcomes');
    let killed = false;
    // Lockstep on client a: each count it hears, it asks for the next; the K-th is the newest write when the kill lands.
    clients[0].ws.on('message', (data) => {
      const n = Number(data.toString());
      if (n === K && !killed) {
        killed = true;
        child.kill('SIGKILL');
      } else if (n > 0 && !killed) clients[0].ws.send('/bump');
    });
    clients[0].ws.send('/bump');
    const [, signal] = await ended;
    t.is(signal, 'SIGKILL', stderr);
    const heard = Math.max(...clients.map((c) => Number(c.inbox.at(-1))));
    t.true(heard >= K);
    for (const c of clients) {
      const got = c.inbox.slice(1).map(Number);
      t.deepEqual(
        got,
        Array.from({ length: got.length }, (_, i) => i + 1),
        'every socket heard the counts in order, none skipped',
      );
    }
    const host = await open({ dir });
    const n = await host.get(Hall, 'hall').count();
    await host.close();
    t.true(n >= heard, `run ${run}: a client heard ${heard}, the disk holds ${n}`);
  }
});
