'use strict';
// The control socket's server, spoken to over a real socket: what a client
// that sends garbage, a huge line or an unknown operation gets (an error, and
// for garbage a closed connection), and that the host keeps serving; the
// option that turns it off; where the socket goes when the directory's path
// is too long for one; and what is left behind after close().
const test = require('ava');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const { open, DurableWorker } = require('../..');
const { connect } = require('../../js/control/client');
const { register } = require('../../js/control/operations');
const { maxSocketPath } = require('../../js/control/socket-path');
const { tmpDir } = require('../helpers/tmp');
const { available, mount } = require('../helpers/powercut');
const { cli } = require('../helpers/control');

// The fallback socket directory of this file's hosts: a private one, not the machine's.
const RUNTIME = fs.mkdtempSync(path.join(os.tmpdir(), 'dw-run-'));
process.env.XDG_RUNTIME_DIR = RUNTIME;
test.after.always(() => fs.rmSync(RUNTIME, { recursive: true, force: true }));

class Counter extends DurableWorker {
  add(n) {
    this.state.set('n', (this.state.get('n') ?? 0) + n);
    return this.state.get('n');
  }
}

async function served(t, options = {}) {
  const dir = path.join(tmpDir(t), 'data');
  const host = await open({ dir, ...options });
  t.teardown(() => host.close());
  return { dir, host };
}

/**
 * A raw connection: `send(text)` writes bytes, `next()` resolves with the
 * next reply line parsed, `closed` when the server has closed it.
 */
function raw(address) {
  const socket = net.connect(address);
  let buffer = '';
  const lines = [];
  const waiters = [];
  socket.setEncoding('utf8');
  socket.on('data', (d) => {
    buffer += d;
    let nl;
    while ((nl = buffer.indexOf('\n')) !== -1) {
      const line = JSON.parse(buffer.slice(0, nl));
      buffer = buffer.slice(nl + 1);
      if (waiters.length > 0) waiters.shift()(line);
      else lines.push(line);
    }
  });
  socket.on('error', () => {});
  const closed = new Promise((resolve) => socket.on('close', resolve));
  return {
    socket,
    closed,
    send: (text) => socket.write(text),
    next: () => (lines.length > 0 ? Promise.resolve(lines.shift()) : new Promise((resolve) => waiters.push(resolve))),
  };
}

test('garbage gets an error reply and a closed connection; an unknown op an error naming the known ones; requests pipelined on one line each are answered in order; the host keeps serving', async (t) => {
  const { dir, host } = await served(t);
  const sock = path.join(dir, '.control.sock');
  await host.get(Counter, 'a').add(1);

  const good = raw(sock);
  good.send('{"id":1,"op":"stats"}\n{"id":"two","op":"frobnicate"}\n\n{"id":3,"op":"summary","params":{"alarms":"x"}}\n{"id":4,"op":"stats","params":[]}\n{"id":5,"op":"stats"}\r\n');
  const r1 = await good.next();
  t.like(r1, { id: 1, ok: true });
  t.is(r1.result.calls, 1);
  const r2 = await good.next();
  t.like(r2, { id: 'two', ok: false, code: 'ERR_DURABLE_CONTROL' });
  t.regex(r2.message, /unknown operation "frobnicate"; the operations are: backup, metrics, stats, summary, (test\.echo, )?top$/);
  t.like(await good.next(), { id: 3, ok: false, code: 'ERR_DURABLE_CONTROL', message: 'params.alarms must be a whole number from 0 to 10000, got "x"' });
  t.like(await good.next(), { id: 4, ok: false, code: 'ERR_DURABLE_CONTROL', message: 'stats: params must be an object' });
  t.like(await good.next(), { id: 5, ok: true });

  const garbage = raw(sock);
  garbage.send('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
  const g = await garbage.next();
  t.like(g, { id: null, ok: false, code: 'ERR_DURABLE_CONTROL' });
  t.regex(g.message, /malformed request, not JSON/);
  await garbage.closed;

  const notRequest = raw(sock);
  notRequest.send('{"id":7,"op":42}\n');
  const n = await notRequest.next();
  t.like(n, { id: 7, ok: false, code: 'ERR_DURABLE_CONTROL' });
  t.regex(n.message, /a line must be a JSON object with a string "op"/);
  await notRequest.closed;

  // A line past 1 MiB, never ended: refused as soon as it passes the bound, not read to its end.
  const huge = raw(sock);
  const chunk = 'x'.repeat(256 * 1024);
  for (let i = 0; i < 8 && !huge.socket.destroyed; i++) huge.send(chunk);
  const h = await huge.next();
  t.like(h, { id: null, ok: false, code: 'ERR_DURABLE_CONTROL' });
  t.regex(h.message, /a request line of more than 1048576 bytes/);
  await huge.closed;

  // The first connection is still served, and so is the host.
  good.send('{"id":6,"op":"stats"}\n');
  t.like(await good.next(), { id: 6, ok: true });
  t.is(await host.get(Counter, 'a').add(1), 2);
  const client = await connect(dir);
  t.teardown(() => client.close());
  t.is((await client.request('stats')).calls, 2);
  good.socket.destroy();
});

test('at most 64 connections at once: the next one is told so and closed, and the first ones are still answered', async (t) => {
  const { dir } = await served(t);
  const sock = path.join(dir, '.control.sock');
  const many = [];
  for (let i = 0; i < 64; i++) {
    const c = raw(sock);
    many.push(c);
    c.send(`{"id":${i},"op":"stats"}\n`);
    t.like(await c.next(), { id: i, ok: true });
  }
  const extra = raw(sock);
  t.deepEqual(await extra.next(), { id: null, ok: false, code: 'ERR_DURABLE_CONTROL', message: 'too many control connections (64); close one and retry' });
  await extra.closed;
  many[0].send('{"id":"again","op":"stats"}\n');
  t.like(await many[0].next(), { id: 'again', ok: true });
  for (const c of many) c.socket.destroy();
});

test('a later feature extends the one registry: a registered operation is answered; a name taken twice is refused', async (t) => {
  register('test.echo', (host, params) => ({ dir: host.dir, params }));
  t.throws(() => register('test.echo', () => 1), { instanceOf: TypeError, message: /already registered/ });
  t.throws(() => register('Bad Name', () => 1), { instanceOf: TypeError });
  const { dir } = await served(t);
  const client = await connect(dir);
  t.teardown(() => client.close());
  t.deepEqual(await client.request('test.echo', { a: [1, 'b'] }), { dir, params: { a: [1, 'b'] } });
  const err = await t.throwsAsync(client.request('metricz'));
  t.regex(err.message, /the operations are: .*test\.echo/);
});

test('metrics answers the host’s Prometheus text', async (t) => {
  const { dir, host } = await served(t);
  await host.get(Counter, 'm').add(1);
  const client = await connect(dir);
  t.teardown(() => client.close());
  const text = await client.request('metrics');
  if (typeof host.metrics !== 'function') {
    t.is(text, undefined);
    return;
  }
  t.is(typeof text, 'string');
  t.regex(text, /durable_workers_calls_total\{class="Counter",method="add",code="ok"\} 1/);
});

test('a sharded host serves one control socket (its shards, worker threads, none); top shows each shard stopped until used, then running with its workers', async (t) => {
  const MODULE = path.join(__dirname, '..', 'fixtures', 'shard-workers.js');
  const { Counter: Sharded } = require(MODULE);
  const { dir, host } = await served(t, { shards: { count: 2, module: MODULE } });
  const client = await connect(dir);
  t.teardown(() => client.close());
  const before = await client.request('top');
  t.deepEqual(
    before.shards.map((s) => [s.index, s.state, s.workers, s.lost]),
    [
      [0, 'stopped', 0, 0],
      [1, 'stopped', 0, 0],
    ],
  );
  for (let i = 0; i < 8; i++) await host.get(Sharded, `s-${i}`).add(1);
  const after = await client.request('top');
  t.deepEqual(
    after.shards.map((s) => s.state),
    ['running', 'running'],
  );
  t.is(
    after.shards.reduce((n, s) => n + s.workers, 0),
    8,
  );
  t.deepEqual(
    fs.readdirSync(dir).filter((f) => f.startsWith('.control')),
    ['.control.sock'],
  );
});

test('open({ control: false }) makes no socket and no pointer, and a client is told no process serves the directory; control must be a boolean', async (t) => {
  const { dir } = await served(t, { control: false });
  t.deepEqual(
    fs.readdirSync(dir).filter((f) => f.startsWith('.control')),
    [],
  );
  const err = await t.throwsAsync(connect(dir));
  t.is(err.code, 'ERR_DURABLE_CONTROL');
  t.regex(err.message, /^no process serves .*data \(nothing answers at .*\.control\.sock/);
  await t.throwsAsync(open({ dir: path.join(tmpDir(t), 'x'), control: 'yes' }), { instanceOf: TypeError, message: /^open\(\): control must be true .* or false, got "yes"$/ });
});

test('the socket is 0600 in the directory, is gone after close(), and a client then hears that no process serves it', async (t) => {
  const dir = path.join(tmpDir(t), 'data');
  const host = await open({ dir });
  const sock = path.join(dir, '.control.sock');
  const st = fs.lstatSync(sock);
  t.true(st.isSocket());
  t.is(st.mode & 0o777, 0o600);
  t.is(fs.statSync(dir).mode & 0o777, 0o700);
  const client = await connect(dir);
  const closedByHost = t.throwsAsync(client.request('stats', {}, { timeout: 0 }).then(() => new Promise(() => {})));
  await host.close();
  t.false(fs.existsSync(sock));
  t.regex((await closedByHost).message, /closed the connection/);
  t.regex((await t.throwsAsync(connect(dir))).message, /no process serves/);
});

test('a directory whose .control.sock would not fit a socket address gets one in the private runtime directory, named in <dir>/.control; clients (the CLI too) find it; close() removes both', async (t) => {
  const base = tmpDir(t);
  const dir = path.join(base, 'a'.repeat(Math.max(1, maxSocketPath() - base.length - 10)), 'data');
  t.true(Buffer.byteLength(path.join(dir, '.control.sock')) > maxSocketPath());
  const host = await open({ dir });
  t.teardown(() => host.close());
  const target = fs.readFileSync(path.join(dir, '.control'), 'utf8').trim();
  t.is(path.dirname(target), path.join(RUNTIME, 'durable-workers'));
  t.regex(path.basename(target), /^[0-9a-f]{24}\.sock$/);
  t.true(fs.lstatSync(target).isSocket());
  t.is(fs.lstatSync(target).mode & 0o777, 0o600);
  t.is(fs.statSync(path.dirname(target)).mode & 0o777, 0o700);
  t.is(fs.statSync(path.join(dir, '.control')).mode & 0o777, 0o600);
  t.false(fs.existsSync(path.join(dir, '.control.sock')));

  await host.get(Counter, 'far').add(1);
  const r = await cli(['inspect', dir, '--json']);
  t.is(r.status, 0, r.stderr);
  t.like(JSON.parse(r.stdout), { live: true, owner: { pid: process.pid }, workers: 1 });

  await host.close();
  t.false(fs.existsSync(target));
  t.false(fs.existsSync(path.join(dir, '.control')));
});

const fuse = available();
if (!fuse.ok) console.log(`control/protocol: skipping the test on a file system without sockets: ${fuse.reason}`);

(fuse.ok ? test : test.skip)(
  'a directory on a file system that cannot hold a socket (the powercut FUSE mount refuses mknod) gets one in the private runtime directory, and clients find it',
  async (t) => {
    const root = tmpDir(t);
    const m = await mount({ backing: path.join(root, 'backing'), mountpoint: path.join(root, 'mnt') });
    t.teardown(() => m.unmount());
    const dir = path.join(m.mountpoint, 'data');
    const host = await open({ dir });
    const target = fs.readFileSync(path.join(dir, '.control'), 'utf8').trim();
    t.is(path.dirname(target), path.join(RUNTIME, 'durable-workers'));
    t.false(fs.existsSync(path.join(dir, '.control.sock')));
    await host.get(Counter, 'on-fuse').add(3);
    const client = await connect(dir);
    t.is((await client.request('stats')).calls, 1);
    client.close();
    await host.close();
    t.false(fs.existsSync(target));
    t.false(fs.existsSync(path.join(dir, '.control')));
  },
);

test('a control socket that cannot be made is a warning (DURABLE_CONTROL_UNAVAILABLE), never a failed open()', async (t) => {
  const dir = path.join(tmpDir(t), 'data');
  fs.mkdirSync(path.join(dir, '.control.sock'), { recursive: true }); // something that is not a socket, in the way
  const warned = new Promise((resolve) => process.once('warning', resolve));
  const host = await open({ dir });
  t.teardown(() => host.close());
  const w = await warned;
  t.is(w.code, 'DURABLE_CONTROL_UNAVAILABLE');
  t.regex(w.message, /has no control socket, so `durable-workers inspect` and `top` cannot reach this process .*\.control\.sock exists and is not a socket/);
  t.is(await host.get(Counter, 'still').add(5), 5);
  t.true(fs.statSync(path.join(dir, '.control.sock')).isDirectory(), 'left alone');
});
