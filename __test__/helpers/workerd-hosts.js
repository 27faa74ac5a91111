'use strict';
// The hosts of the scenario suite (cloudflare/scenarios.test.js), behind one client shape:
//   call(className, id, method, ...args) → the method's result (or its error, thrown)
//   delete(className, id) → whether the worker existed (host.delete / hostOf(env).delete)
//   socket(roomId, user) → an open ws client joined to Room roomId
//   hibernate(roomId) → resolves once the Room's instance is gone with its sockets open
//   restart({ crash }) → the host process state is lost and comes back on the same storage
//   close()
// node: open() in this process. shards: open() with the fixture's classes on
// two worker threads. workerd: the same fixture module bundled by
// buildWorkerd and run by a real workerd process, reached over HTTP. HOSTS
// is the table every scenario runs against.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const http = require('node:http');
const WebSocket = require('ws');
const { open } = require('../..');
const { buildWorkerd, startWorkerd, freePort, wire } = require('../../js/cloudflare');
const fixture = require('../fixtures/workerd-scenarios');

const FIXTURE = path.join(__dirname, '..', 'fixtures', 'workerd-scenarios.js');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function opened(url) {
  const ws = new WebSocket(url);
  const inbox = [];
  const waiters = [];
  ws.on('message', (m) => {
    const w = waiters.shift();
    if (w) w(String(m));
    else inbox.push(String(m));
  });
  ws.next = () => (inbox.length ? Promise.resolve(inbox.shift()) : new Promise((r) => waiters.push(r)));
  ws.json = async () => JSON.parse(await ws.next());
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve(ws));
    ws.once('error', reject);
  });
}

// Long enough that a loaded machine's pause between two messages of one test
// never evicts by itself; hibernate() waits it out on purpose.
const EVICT_AFTER_MS = 1500;

async function nodeHost({ shards = false } = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dw-95-node-'));
  const options = { dir, evictAfter: EVICT_AFTER_MS, ...(shards ? { shards: { count: 2, module: FIXTURE } } : {}) };
  let host = await open(options);
  let alarms = await host.startAlarms({ classes: [fixture.Clock] });
  const server = http.createServer();
  const wss = new WebSocket.Server({ server });
  wss.on('connection', (ws, req) => {
    const url = new URL(req.url, 'http://x');
    host.get(fixture.Room, decodeURIComponent(url.pathname.slice(6))).join(ws, url.searchParams.get('user'));
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const base = `ws://127.0.0.1:${server.address().port}`;
  return {
    name: shards ? 'shards' : 'node',
    call: async (cls, id, method, ...args) => host.get(fixture[cls], id)[method](...args),
    delete: (cls, id) => host.delete(fixture[cls], id),
    socket: (room, user) => opened(`${base}/room/${encodeURIComponent(room)}?user=${user}`),
    async hibernate(room) {
      const gone = new Promise((resolve) => {
        const on = (e) => {
          if (e.class === 'Room' && e.id === room) {
            host.off('evicted', on);
            resolve();
          }
        };
        host.on('evicted', on);
      });
      // Eviction is swept when work arrives: idle past evictAfter, then a call elsewhere.
      await sleep(EVICT_AFTER_MS + 100);
      await host.get(fixture.Box, 'sweep').keys();
      await gone;
    },
    async restart() {
      await alarms.stop();
      await host.close();
      host = await open(options);
      alarms = await host.startAlarms({ classes: [fixture.Clock] });
    },
    async close() {
      await alarms.stop();
      await host.close();
      wss.close();
      server.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function workerdHost() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dw-95-workerd-'));
  const port = await freePort();
  const built = await buildWorkerd({ module: FIXTURE, outDir: path.join(dir, 'build'), dataDir: path.join(dir, 'data'), port });
  let w = await startWorkerd({ config: built.config, port });
  return {
    name: 'workerd',
    dir,
    get process() {
      return w;
    },
    async call(cls, id, method, ...args) {
      const res = await fetch(`${w.url}/call`, { method: 'POST', body: wire.encode({ class: cls, id, method, args }) });
      const r = wire.decode(await res.text());
      if (!r.ok) throw r.error;
      return r.value;
    },
    delete(cls, id) {
      return this.call(cls, id, '__delete');
    },
    socket: (room, user) => opened(`ws://127.0.0.1:${port}/room/${encodeURIComponent(room)}?user=${user}`),
    async hibernate() {
      // workerd evicts an object whose only work is hibernatable sockets after
      // about 10 s idle; nothing may touch it meanwhile, so this is a wait.
      await sleep(12_000);
    },
    /** SIGKILL (crash) or SIGTERM, then a new workerd on the same config and storage. */
    async restart({ crash = true } = {}) {
      if (crash) await w.kill();
      else await w.stop();
      w = await startWorkerd({ config: built.config, port });
    },
    async close() {
      await w.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Every host the scenario suite runs against: name → a function starting it. */
const HOSTS = { node: () => nodeHost(), shards: () => nodeHost({ shards: true }), workerd: () => workerdHost() };

module.exports = { HOSTS, nodeHost, workerdHost, sleep, FIXTURE };
