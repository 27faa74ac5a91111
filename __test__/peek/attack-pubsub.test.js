'use strict';
// Attacks on pubsub and commands (issue 24, item 6), each a probe worker run
// through the real host: `peek serve` on its in-process bus and over a
// WebSocket hub (this file's, speaking the channel's frames), and a
// supervisor in this process on the in-process bus (the test's own channel
// on that bus is the outside commander, and sees what the probes leak).
// Every test here failed before the fix (0f69828).
//
// The holes: a worker granted only `pubsub` published to cmd:execute:<other>
// and ran another worker's command; a subscription such as "*" or "c*" woke a
// worker with every command (params, reply topic) and every result; a worker
// published a forged result on another commander's reply topic before the
// real one; a command's resultTopic could be a command topic, so a result
// (or a worker answering) ran another worker.
const test = require('ava');
const fs = require('node:fs');
const path = require('node:path');
const { randomUUID } = require('node:crypto');
const { createWorkerHost, nodeAdapter, createSupervisor, loadManifest } = require('durable-workers/peek');
const { serve } = require('../helpers/peek');
const { tmpDir } = require('../helpers/tmp');
const { sleep, until } = require('../helpers/poll');

function install(root, name, source, manifest = {}) {
  fs.mkdirSync(root, { recursive: true });
  const dir = path.join(root, name);
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'package.json'), '{ "type": "module" }');
  fs.writeFileSync(path.join(dir, 'worker.js'), source);
  fs.writeFileSync(path.join(dir, 'manifest.json'), JSON.stringify({ name, worker: { url: 'worker.js' }, ...manifest }));
  return path.join(dir, 'manifest.json');
}

/** A supervisor in this process on the in-process bus, and a channel on that bus hearing `topics`. */
async function inProcess(t, workers, topics) {
  const logs = [];
  const adapter = nodeAdapter({ dir: path.join(path.dirname(workers), 'state'), log: (r) => logs.push(r) });
  const host = createWorkerHost({ adapter });
  const supervisor = createSupervisor({ dir: workers, adapter, host, log: (r) => logs.push(r) });
  await supervisor.start();
  t.teardown(() => supervisor.close());
  const heard = [];
  const client = await adapter.openChannel({ topics }, (m) => heard.push(m));
  t.teardown(() => client.close());
  return { client, heard, logs, supervisor };
}

/** The victim: reports every run of it on 'victim-ran' (so the test sees it), answers after `delay` ms. */
const VICTIM = (delay = 0) => `export default async (api, ctx) => {
  await api.publish('victim-ran', { trigger: ctx.trigger });
  await new Promise((r) => setTimeout(r, ${delay}));
  return { secret: 'victim-result', params: ctx.trigger.params ?? null };
};`;

test.serial('peek serve: a worker granted only pubsub cannot run another worker’s command', async (t) => {
  const workers = path.join(tmpDir(t), 'workers');
  install(workers, 'victim', 'export default async (api, ctx) => { api.log("victim ran", JSON.stringify(ctx.trigger)); };', { capabilities: { log: {} } });
  install(
    workers,
    'attacker',
    `export default async (api) => {
      for (const topic of ['cmd:execute:victim', 'cmd:execute:attacker', 'cmd:result:x', 'cmd:reply:victim:x']) {
        try {
          await api.publish(topic, { params: { evil: true }, resultTopic: 'loot' });
          api.log('published', topic);
        } catch (err) {
          api.log('refused', topic, err.code);
        }
      }
    };`,
    { schedule: 'every 1s', capabilities: { pubsub: { subscribe: ['loot'] }, log: {} } },
  );
  const s = serve(t, workers);
  const logs = () => s.lines.filter((l) => l.event === 'log');
  await until(
    () => logs().filter((l) => l.worker === 'attacker' && ['refused', 'published'].includes(l.args[0])).length >= 8,
    30_000,
    () => `two attacker runs; stdout ${JSON.stringify(s.lines)}; stderr ${s.stderr()}`,
  );
  await sleep(1500);
  t.deepEqual(
    logs().filter((l) => l.worker === 'victim'),
    [],
    'the victim never ran',
  );
  const attacker = logs().filter((l) => l.worker === 'attacker' && ['refused', 'published'].includes(l.args[0]));
  t.deepEqual(
    attacker.filter((l) => l.args[0] === 'published'),
    [],
  );
  t.true(
    attacker.slice(0, 4).every((l) => l.args[0] === 'refused' && l.args[2] === 'ERR_PEEK_PUBSUB_DENIED'),
    JSON.stringify(attacker.slice(0, 4)),
  );
  s.proc.kill('SIGTERM');
  await s.exited;
});

test.serial('a subscription cannot hear commands nor another commander’s results', async (t) => {
  // Today's manifests accept "*" and "c*", which match cmd:execute:*: the
  // supervisor woke such a worker with every command and every result.
  const workers = path.join(tmpDir(t), 'workers');
  const LEAK = `export default async (api, ctx) => { await api.publish('leak', { by: ctx.trigger.topic, message: ctx.trigger.message }); };`;
  const all = install(workers, 'all', LEAK, { capabilities: { pubsub: { subscribe: ['*'] } } });
  const prefix = install(workers, 'prefix', LEAK, { capabilities: { pubsub: { subscribe: ['cm*'] } } });
  // A topic outside cmd: is the commander's choice: a worker subscribed to
  // it is not woken with a result on it.
  install(workers, 'legacy', LEAK, { capabilities: { pubsub: { subscribe: ['result-*', 'news'] } } });
  install(workers, 'victim', VICTIM(), { capabilities: { pubsub: {} } });
  for (const m of [all, prefix]) t.throws(() => loadManifest(m), { code: 'ERR_PEEK_MANIFEST', message: /capabilities\.pubsub\.subscribe\[0\]/ });

  const reply = `cmd:result:${randomUUID()}`;
  const { client, heard } = await inProcess(t, workers, ['leak', reply, 'result-1', 'victim-ran']);
  await client.publish('cmd:execute:victim', { params: { token: 's3cret' }, resultTopic: reply });
  await client.publish('cmd:execute:victim', { params: { token: 's3cret' }, resultTopic: 'result-1' });
  const mine = await until(() => heard.find((m) => m.topic === reply), 20_000, 'the result on the commander’s reply topic');
  t.like(mine.message, { ok: true, value: { secret: 'victim-result' } });
  await until(() => heard.find((m) => m.topic === 'result-1'), 20_000, 'the result on result-1');
  // The legacy listener still wakes for what it subscribed to.
  await client.publish('news', 'hello');
  await until(() => heard.find((m) => m.topic === 'leak' && m.message.by === 'news'), 20_000, 'the wake on news');
  await sleep(1000);
  const leaks = heard.filter((m) => m.topic === 'leak' && m.message.by !== 'news');
  t.deepEqual(leaks, [], 'no worker heard a command or a result');
});

test.serial('a worker cannot forge a result on another commander’s reply topic', async (t) => {
  const workers = path.join(tmpDir(t), 'workers');
  install(workers, 'victim', VICTIM(1500), { capabilities: { pubsub: {} } });
  // Told the reply topics (as if it had guessed or read them), it answers first.
  install(
    workers,
    'forger',
    `export default async (api, ctx) => {
      for (const topic of ctx.trigger.message) {
        try {
          await api.publish(topic, { ok: true, value: { secret: 'forged' }, ms: 0 });
          await api.publish('forged', topic);
        } catch (err) {
          await api.publish('refused', { topic, code: err.code });
        }
      }
    };`,
    { capabilities: { pubsub: { subscribe: ['go'] } } },
  );
  const reply = `cmd:result:${randomUUID()}`;
  const { client, heard } = await inProcess(t, workers, [reply, 'result-2', 'forged', 'refused', 'victim-ran']);
  await client.publish('cmd:execute:victim', { params: {}, resultTopic: reply });
  await client.publish('cmd:execute:victim', { params: {}, resultTopic: 'result-2' });
  await until(() => heard.find((m) => m.topic === 'victim-ran'), 20_000, 'the victim to start');
  await client.publish('go', [reply, 'result-2']);
  await until(() => heard.filter((m) => m.topic === 'refused' || m.topic === 'forged').length === 2, 20_000, 'the forger’s two attempts');
  await until(() => heard.find((m) => m.topic === 'result-2'), 20_000, 'the second result');
  t.deepEqual(
    heard.filter((m) => m.topic === 'forged'),
    [],
  );
  t.deepEqual(
    heard.filter((m) => m.topic === 'refused').map((m) => m.message.code),
    ['ERR_PEEK_PUBSUB_DENIED', 'ERR_PEEK_PUBSUB_DENIED'],
  );
  for (const topic of [reply, 'result-2']) {
    t.deepEqual(
      heard.filter((m) => m.topic === topic).map((m) => m.message.value.secret),
      ['victim-result'],
      topic,
    );
  }
});

test.serial('a result topic that is a command topic is refused: a result cannot run another worker', async (t) => {
  const workers = path.join(tmpDir(t), 'workers');
  // The answering worker publishes its own answer on resultTopic, with params of its choosing.
  install(workers, 'echo', `export default async (api, ctx) => { await api.publish(ctx.trigger.resultTopic, { params: { from: 'echo' } }); };`, { capabilities: { pubsub: {} } });
  install(workers, 'victim', VICTIM(), { capabilities: { pubsub: {} } });
  const { client, heard, logs } = await inProcess(t, workers, ['victim-ran']);
  await client.publish('cmd:execute:echo', { params: {}, resultTopic: 'cmd:execute:victim' });
  await until(
    () => logs.find((r) => String(r.args).includes('cmd:execute:victim')),
    20_000,
    () => `the refusal logged; logs ${JSON.stringify(logs)}`,
  );
  await sleep(1500);
  t.deepEqual(heard, [], 'the victim never ran');
});

test.serial('a worker granted commands sends only those, picks no reply topic, and its reply comes back to it alone', async (t) => {
  const workers = path.join(tmpDir(t), 'workers');
  install(workers, 'victim', VICTIM(), { capabilities: { pubsub: {} } });
  install(workers, 'other', VICTIM(), { capabilities: { pubsub: {} } });
  install(
    workers,
    'commander',
    `export default async (api, ctx) => {
      if (ctx.trigger.topic.startsWith('cmd:reply:')) return api.publish('got', { topic: ctx.trigger.topic, message: ctx.trigger.message });
      const tries = [
        ['cmd:execute:other', { params: {} }],
        ['cmd:execute:victim', { params: {}, resultTopic: 'cmd:execute:other' }],
        ['cmd:execute:victim', { params: {}, resultTopic: 'mine' }],
        ['cmd:execute:victim', { params: { n: 2 } }],
      ];
      for (const [topic, message] of tries) {
        try {
          const r = await api.publish(topic, message);
          await api.publish('sent', { topic, r });
        } catch (err) {
          await api.publish('refused', { topic, code: err.code });
        }
      }
    };`,
    { capabilities: { pubsub: { subscribe: ['go'], commands: ['victim'] } } },
  );
  // A listener that would hear replies if they went anywhere it could subscribe.
  install(workers, 'listener', `export default async (api, ctx) => { await api.publish('leak', ctx.trigger.topic); };`, { capabilities: { pubsub: { subscribe: ['mine', 'reply*', 'result*'] } } });
  const { client, heard, logs } = await inProcess(t, workers, ['got', 'sent', 'refused', 'leak', 'victim-ran']);
  await client.publish('go', {});
  const got = await until(
    () => heard.find((m) => m.topic === 'got'),
    20_000,
    () => `the reply to wake the commander; heard ${JSON.stringify(heard)}; logs ${JSON.stringify(logs)}`,
  );
  const sent = heard.filter((m) => m.topic === 'sent');
  t.is(sent.length, 1);
  t.regex(sent[0].message.r.resultTopic, /^cmd:reply:commander:/);
  t.is(got.message.topic, sent[0].message.r.resultTopic);
  t.like(got.message.message, { ok: true, value: { secret: 'victim-result', params: { n: 2 } } });
  t.deepEqual(
    heard.filter((m) => m.topic === 'refused').map((m) => m.message.code),
    ['ERR_PEEK_PUBSUB_DENIED', 'ERR_PEEK_PUBSUB_DENIED', 'ERR_PEEK_PUBSUB_DENIED'],
  );
  await sleep(1000);
  t.deepEqual(
    heard.filter((m) => m.topic === 'victim-ran').map((m) => m.message.trigger.name),
    ['victim'],
    'only the granted command ran, once',
  );
  t.deepEqual(
    heard.filter((m) => m.topic === 'leak'),
    [],
  );
});

/** A pubsub hub speaking the channel's JSON frames: records publishes, forwards them to matching subscribers. */
async function hub(t) {
  const http = require('node:http');
  const { WebSocketServer } = require('ws');
  const server = http.createServer();
  const wss = new WebSocketServer({ server });
  const h = { published: [], subscribed: [], subs: new Map() };
  const matches = (topics, topic) => [...topics].some((s) => s === topic || (s.endsWith('*') && topic.startsWith(s.slice(0, -1))));
  const forward = (topic, message) => {
    for (const [ws, topics] of h.subs) if (ws.readyState === 1 && matches(topics, topic)) ws.send(JSON.stringify({ type: 'message', topic, message }));
  };
  wss.on('connection', (ws) => {
    h.subs.set(ws, new Set());
    ws.on('close', () => h.subs.delete(ws));
    ws.on('message', (data) => {
      const m = JSON.parse(String(data));
      if (m.type === 'subscribe') {
        m.topics.forEach((x) => h.subs.get(ws).add(x));
        h.subscribed.push(...m.topics);
      }
      if (m.type === 'publish') {
        h.published.push({ topic: m.topic, message: m.message });
        forward(m.topic, m.message);
      }
    });
  });
  h.send = (topic, message) => {
    h.published.push({ topic, message, fromTest: true });
    forward(topic, message);
  };
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  h.url = `ws://127.0.0.1:${server.address().port}`;
  t.teardown(() => {
    for (const ws of h.subs.keys()) ws.terminate();
    return new Promise((resolve) => server.close(resolve));
  });
  return h;
}

test.serial('peek serve over a WebSocket hub: the same rules, a commander’s cmd:result: reply, and a worker’s reply back through the hub', async (t) => {
  const workers = path.join(tmpDir(t), 'workers');
  install(workers, 'victim', VICTIM(), { capabilities: { pubsub: {} } });
  install(
    workers,
    'attacker',
    `export default async (api) => {
      try { await api.publish('cmd:execute:victim', { params: { evil: true } }); await api.publish('attack', 'sent'); }
      catch (err) { await api.publish('attack', err.code); }
    };`,
    { schedule: 'every 1s', capabilities: { pubsub: {} } },
  );
  install(
    workers,
    'commander',
    `export default async (api, ctx) => {
      if (ctx.trigger.topic.startsWith('cmd:reply:')) return api.publish('got', ctx.trigger.message);
      await api.publish('sent', await api.publish('cmd:execute:victim', { params: { n: 3 } }));
    };`,
    { capabilities: { pubsub: { subscribe: ['go'], commands: ['victim'] } } },
  );
  const h = await hub(t);
  const s = serve(t, workers, ['--channel', h.url]);
  await until(
    () => h.subscribed.includes('cmd:reply:*') && h.subscribed.includes('go'),
    20_000,
    () => `the supervisor to subscribe; ${JSON.stringify(h.subscribed)}; stderr ${s.stderr()}`,
  );
  const topics = () => h.published.map((p) => p.topic);
  await until(
    () => h.published.filter((p) => p.topic === 'attack').length >= 2,
    30_000,
    () => `two attacker runs; ${JSON.stringify(topics())}`,
  );
  t.deepEqual([...new Set(h.published.filter((p) => p.topic === 'attack').map((p) => p.message))], ['ERR_PEEK_PUBSUB_DENIED']);

  const reply = `cmd:result:${randomUUID()}`;
  h.send('cmd:execute:victim', { params: { n: 1 }, resultTopic: reply });
  const mine = await until(
    () => h.published.find((p) => p.topic === reply),
    20_000,
    () => `the result; ${JSON.stringify(topics())}`,
  );
  t.like(mine.message, { ok: true, value: { params: { n: 1 } } });

  h.send('go', {});
  const got = await until(
    () => h.published.find((p) => p.topic === 'got'),
    20_000,
    () => `the commander’s reply; ${JSON.stringify(topics())}; stderr ${s.stderr()}`,
  );
  t.like(got.message, { ok: true, value: { params: { n: 3 } } });
  t.regex(h.published.find((p) => p.topic === 'sent').message.resultTopic, /^cmd:reply:commander:/);
  // Only the commander's and the test's commands reached the hub.
  t.deepEqual(
    h.published.filter((p) => p.topic.startsWith('cmd:execute:')).map((p) => [p.topic, p.message.params, Boolean(p.fromTest)]),
    [
      ['cmd:execute:victim', { n: 1 }, true],
      ['cmd:execute:victim', { n: 3 }, false],
    ],
  );
  s.proc.kill('SIGTERM');
  await s.exited;
});

test.serial('a command nobody answers cannot silence an ordinary topic by naming it as its reply topic', async (t) => {
  const workers = path.join(tmpDir(t), 'workers');
  install(workers, 'listener', `export default async (api, ctx) => { await api.publish('heard', ctx.trigger.message); };`, {
    capabilities: { pubsub: { subscribe: ['orders'] } },
  });
  const { client, heard } = await inProcess(t, workers, ['heard']);
  await client.publish('cmd:execute:nobody-answers', { resultTopic: 'orders' });
  await client.publish('orders', 'order-1');
  const woken = await until(() => heard.find((m) => m.topic === 'heard' && m.message === 'order-1'), 20_000, 'the listener woken on orders');
  t.is(woken.message, 'order-1');
});
