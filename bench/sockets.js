#!/usr/bin/env node
'use strict';
// WebSockets that hibernate: many idle sockets over many rooms cost the
// sockets, not open rooms. A server (this process) with maxLive 64; clients in
// a child process (file descriptors: each side of 10,000 sockets needs its own).
//
//   node bench/sockets.js [--sockets N] [--rooms R] [--active A] [--seconds S]
//
// Prints the server's RSS before and after the sockets connect, per socket,
// and messages/s round trip when clients in A rooms send at once.

const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');
const { fork } = require('node:child_process');
const { parseArgs } = require('node:util');

if (process.argv[2] === '--client') {
  client();
} else {
  server().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}

async function server() {
  const { WebSocketServer } = require('ws');
  const { open, DurableWorker } = require('..');
  const { values } = parseArgs({
    options: {
      sockets: { type: 'string', default: '10000' },
      rooms: { type: 'string', default: '1000' },
      active: { type: 'string', default: '100' },
      seconds: { type: 'string', default: '5' },
    },
  });
  const sockets = Number(values.sockets);
  const rooms = Number(values.rooms);

  class Room extends DurableWorker {
    join(ws) {
      this.ctx.acceptWebSocket(ws);
    }
    webSocketMessage(ws, data) {
      const n = (this.state.get('n') ?? 0) + 1;
      this.state.set('n', n);
      ws.send(`${n} ${data}`);
    }
  }

  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dw-bench-sockets-'));
  const host = await open({ dir, maxLive: 64 });
  const wss = new WebSocketServer({ noServer: true });
  const httpServer = http.createServer();
  httpServer.on('upgrade', (req, sock, head) => wss.handleUpgrade(req, sock, head, (ws) => host.get(Room, req.url.slice(1)).join(ws)));
  await new Promise((r) => httpServer.listen(0, '127.0.0.1', r));
  const url = `ws://127.0.0.1:${httpServer.address().port}`;

  global.gc?.();
  const before = process.memoryUsage().rss;
  const child = fork(__filename, ['--client'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const ask = (msg) =>
    new Promise((resolve, reject) => {
      child.once('message', resolve);
      child.once('exit', (code) => reject(new Error(`client exited with ${code}`)));
      child.send(msg);
    });
  const connected = await ask({ cmd: 'connect', url, sockets, rooms });
  await new Promise((r) => setTimeout(r, 500));
  global.gc?.();
  const after = process.memoryUsage().rss;
  const stats = host.stats();
  const traffic = await ask({ cmd: 'traffic', active: Number(values.active), seconds: Number(values.seconds) });
  child.kill();
  const mb = (b) => (b / 2 ** 20).toFixed(1);
  console.log(
    `sockets: ${connected.open} idle sockets over ${rooms} rooms, maxLive 64: server RSS ${mb(before)} → ${mb(after)} MB ` +
      `(${((after - before) / 1024 / connected.open).toFixed(1)} KB per socket); ${stats.live} rooms open, ${stats.sockets} sockets held`,
  );
  console.log(
    `sockets: ${traffic.active} active rooms, one client each sending and awaiting its reply: ${Math.round(traffic.perSec)} messages/s ` +
      `(p50 ${traffic.p50.toFixed(2)} ms, p99 ${traffic.p99.toFixed(2)} ms); ${host.stats().evicted} evictions in all`,
  );
  await host.close();
  httpServer.close();
  fs.rmSync(dir, { recursive: true, force: true });
}

function client() {
  const { connectClients } = require('./ws-clients');
  const clients = [];
  process.on('message', async (msg) => {
    if (msg.cmd === 'connect') {
      clients.push(...(await connectClients((i) => `${msg.url}/room-${i % msg.rooms}`, msg.sockets)));
      process.send({ open: clients.length });
    } else if (msg.cmd === 'traffic') {
      // One client in each of `active` rooms (the first `active` clients are in distinct rooms).
      const active = clients.slice(0, msg.active);
      const latencies = [];
      const until = performance.now() + msg.seconds * 1000;
      await Promise.all(
        active.map(async (ws) => {
          while (performance.now() < until) {
            const t = performance.now();
            const reply = new Promise((r) => ws.once('message', r));
            ws.send('hi');
            await reply;
            latencies.push(performance.now() - t);
          }
        }),
      );
      latencies.sort((a, b) => a - b);
      const at = (p) => latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))];
      process.send({ active: active.length, perSec: latencies.length / msg.seconds, p50: at(50), p99: at(99) });
    }
  });
}
