'use strict';
// The channel: commands in (cmd:execute:<name>) become runs with a command
// trigger, and the result goes out to resultTopic: published by the worker
// itself through ctx.waitUntil, or by the host when the worker does not.
// Over a real `ws` hub (a node:http server in this process, speaking the
// documented JSON frames) to the real `peek serve` CLI, including a reconnect
// after the hub drops the connection; and over the in-process bus.
const test = require('ava');
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { WebSocketServer } = require('ws');
const { createWorkerHost, nodeAdapter, createSupervisor } = require('durable-workers/peek');
const { tmpDir } = require('../helpers/tmp');
const { until } = require('../helpers/poll');

const BIN = path.join(__dirname, '..', '..', 'bin', 'durable-workers.js');

function install(root, name, source, manifest = {}) {
  const dir = path.join(root, name);
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'package.json'), '{ "type": "module" }');
  fs.writeFileSync(path.join(dir, 'worker.js'), source);
  fs.writeFileSync(path.join(dir, 'manifest.json'), JSON.stringify({ name, worker: { url: 'worker.js' }, ...manifest }));
}

const ANSWERS = `export default async (api, ctx) => {
  const value = { doubled: ctx.trigger.params.n * 2, command: ctx.trigger.name };
  ctx.waitUntil(api.publish(ctx.trigger.resultTopic, { from: 'worker', value }));
  return value;
};`;
const SILENT = 'export default async (api, ctx) => ctx.trigger.params.n + 1;';

/** A pubsub hub: records subscriptions and publishes, forwards publishes to matching subscribers. */
async function hub(t) {
  const server = http.createServer();
  const wss = new WebSocketServer({ server });
  const h = { published: [], subscribed: [], sockets: new Set(), connections: 0, headers: [] };
  const subs = new Map();
  const matches = (topics, topic) => [...topics].some((s) => s === topic || (s.endsWith('*') && topic.startsWith(s.slice(0, -1))));
  wss.on('connection', (ws, req) => {
    h.connections++;
    h.headers.push(req.headers);
    h.sockets.add(ws);
    subs.set(ws, new Set());
    ws.on('close', () => h.sockets.delete(ws));
    ws.on('message', (data) => {
      const m = JSON.parse(String(data));
      if (m.type === 'subscribe') {
        m.topics.forEach((x) => subs.get(ws).add(x));
        h.subscribed.push(...m.topics);
      }
      if (m.type === 'publish') {
        h.published.push({ topic: m.topic, message: m.message });
        for (const [other, topics] of subs) if (matches(topics, m.topic)) other.send(JSON.stringify({ type: 'message', topic: m.topic, message: m.message }));
      }
    });
  });
  h.send = (topic, message) => {
    for (const [ws, topics] of subs) if (ws.readyState === 1 && matches(topics, topic)) ws.send(JSON.stringify({ type: 'message', topic, message }));
  };
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  h.url = `ws://127.0.0.1:${server.address().port}`;
  t.teardown(() => {
    for (const ws of h.sockets) ws.terminate();
    return new Promise((resolve) => server.close(resolve));
  });
  return h;
}

/** A supervisor in this process on the in-process bus; closed at teardown. Returns its adapter. */
async function inProcess(t, dir, workers) {
  const adapter = nodeAdapter({ dir: path.join(dir, 'state'), log: () => {} });
  const host = createWorkerHost({ adapter });
  const supervisor = createSupervisor({ dir: workers, adapter, host });
  await supervisor.start();
  t.teardown(() => supervisor.close());
  return adapter;
}

test.serial('peek serve over a WebSocket hub: commands run, results reach resultTopic, and a dropped connection is remade', async (t) => {
  const dir = tmpDir(t);
  const workers = path.join(dir, 'workers');
  install(workers, 'doubler', ANSWERS, { capabilities: { pubsub: {} } });
  install(workers, 'adder', SILENT, { commands: ['add-one'] });
  const h = await hub(t);
  const proc = spawn(process.execPath, [BIN, 'peek', 'serve', workers, '--json', '--channel', h.url, '--state', path.join(dir, 'state')], { stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  proc.stderr.on('data', (d) => (err += d));
  t.teardown(() => proc.kill('SIGKILL'));
  await until(
    () => h.subscribed.includes('cmd:execute:*'),
    20_000,
    () => `the supervisor to subscribe; stderr: ${err}`,
  );

  h.send('cmd:execute:doubler', { params: { n: 21 }, resultTopic: 'results-1' });
  const one = await until(() => h.published.find((p) => p.topic === 'results-1'), 20_000, 'the result of doubler');
  t.deepEqual(one.message, { from: 'worker', value: { doubled: 42, command: 'doubler' } });

  h.send('cmd:execute:add-one', { params: { n: 1 }, resultTopic: 'results-2' });
  const two = await until(() => h.published.find((p) => p.topic === 'results-2'), 20_000, 'the result of add-one');
  t.is(two.message.ok, true);
  t.is(two.message.value, 2, 'a worker that does not publish has its RunResult published by the host');
  t.is(h.published.filter((p) => p.topic === 'results-1').length, 1, 'a worker that answered itself is not answered twice');

  // The hub drops the connection; the supervisor reconnects and subscribes again.
  const before = h.connections;
  for (const ws of h.sockets) ws.terminate();
  await until(() => h.connections > before && h.sockets.size > 0, 20_000, 'a reconnect');
  await until(() => h.subscribed.filter((x) => x === 'cmd:execute:*').length >= 2, 20_000, 'the subscription sent again');
  h.send('cmd:execute:doubler', { params: { n: 5 }, resultTopic: 'results-3' });
  const three = await until(() => h.published.find((p) => p.topic === 'results-3'), 20_000, 'a result after the reconnect');
  t.is(three.message.value.doubled, 10);
  proc.kill('SIGTERM');
});

test.serial('without a URL the supervisor uses the in-process bus: same commands, same results, and a worker installed later is found', async (t) => {
  const dir = tmpDir(t);
  const workers = path.join(dir, 'workers');
  install(workers, 'doubler', ANSWERS, { capabilities: { pubsub: {} } });
  const adapter = await inProcess(t, dir, workers);
  const heard = [];
  const client = await adapter.openChannel({ topics: ['out-*'] }, (m) => heard.push(m));
  t.teardown(() => client.close());

  await client.publish('cmd:execute:doubler', { params: { n: 4 }, resultTopic: 'out-1' });
  const one = await until(() => heard.find((m) => m.topic === 'out-1'), 20_000, 'the result');
  t.deepEqual(one.message.value, { doubled: 8, command: 'doubler' });

  // Installed while the supervisor runs: a command for it triggers a rescan.
  install(workers, 'newcomer', SILENT);
  await client.publish('cmd:execute:newcomer', { params: { n: 9 }, resultTopic: 'out-2' });
  const two = await until(() => heard.find((m) => m.topic === 'out-2'), 20_000, 'the newcomer result');
  t.is(two.message.value, 10);
});

test.serial('a wake topic the manifest subscribes to runs the worker with a wake trigger', async (t) => {
  const dir = tmpDir(t);
  const workers = path.join(dir, 'workers');
  install(workers, 'listener', 'export default async (api, ctx) => { await api.publish("heard", ctx.trigger); };', { capabilities: { pubsub: { subscribe: ['news'] } } });
  const adapter = await inProcess(t, dir, workers);
  const heard = [];
  const client = await adapter.openChannel({ topics: ['heard'] }, (m) => heard.push(m));
  await client.publish('news', { headline: 'x' });
  const m = await until(() => heard[0], 20_000, 'the wake run');
  t.deepEqual(m.message, { kind: 'wake', topic: 'news', message: { headline: 'x' } });
  await client.close();
});

test.serial('channelHeaders go with the upgrade request, and bad ones are refused when the adapter is made', async (t) => {
  const h = await hub(t);
  const dir = tmpDir(t);
  t.throws(() => nodeAdapter({ dir: path.join(dir, 'bad'), channelUrl: h.url, channelHeaders: { authorization: 42 } }), { instanceOf: TypeError, message: /channelHeaders/ });
  const adapter = nodeAdapter({ dir: path.join(dir, 'state'), log: () => {}, channelUrl: h.url, channelHeaders: { authorization: 'Bearer s3cret' } });
  t.teardown(() => adapter.close());
  const channel = await adapter.openChannel({ topics: ['news'] }, () => {});
  await until(() => h.subscribed.includes('news'));
  t.is(h.headers[0].authorization, 'Bearer s3cret');
  t.false(h.headers.some((x) => String(x.host).includes('s3cret')));
  await channel.close();
});
