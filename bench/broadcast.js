#!/usr/bin/env node
'use strict';
// Broadcast to one room: N sockets accepted by one worker, which writes a
// counter and sends it to every socket, as fast as callers ask. Against what
// a user writes without it, in the same run: the same write, then a loop of
// `ws.send` over `ctx.getWebSockets()`. Clients are real `ws` sockets in a
// child process; delivery latency is from the call's start (the write's
// commit included: nothing leaves before it) to each client's receipt, on
// the machine's monotonic clock (process.hrtime, shared by both processes).
//
//   node bench/broadcast.js [--sockets N] [--callers C] [--seconds S] [--rounds R] [--json FILE]

const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');
const { fork } = require('node:child_process');
const { parseArgs } = require('node:util');

if (process.argv[2] === '--client') client();
else
  server().catch((err) => {
    console.error(err);
    process.exit(1);
  });

async function server() {
  const { WebSocketServer } = require('ws');
  const { open, DurableWorker } = require('..');
  const { values } = parseArgs({
    options: {
      sockets: { type: 'string', default: '1000' },
      callers: { type: 'string', default: '4' },
      seconds: { type: 'string', default: '3' },
      rounds: { type: 'string', default: '3' },
      json: { type: 'string' },
    },
  });
  const sockets = Number(values.sockets);
  const callers = Number(values.callers);
  const seconds = Number(values.seconds);

  class Room extends DurableWorker {
    join(ws) {
      this.ctx.acceptWebSocket(ws);
    }
    /** ctx.broadcast: one gate wait, the text encoded once. */
    broadcast(sentAt) {
      const n = (this.state.get('n') ?? 0) + 1;
      this.state.set('n', n);
      this.ctx.broadcast(`${n} ${sentAt}`);
    }
    /** What a user writes without it: a send per socket, each through the gate. */
    loop(sentAt) {
      const n = (this.state.get('n') ?? 0) + 1;
      this.state.set('n', n);
      for (const ws of this.ctx.getWebSockets()) ws.send(`${n} ${sentAt}`);
    }
  }

  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dw-bench-broadcast-'));
  const host = await open({ dir });
  const room = host.get(Room, 'lobby');
  const wss = new WebSocketServer({ noServer: true });
  const httpServer = http.createServer();
  httpServer.on('upgrade', (req, sock, head) => wss.handleUpgrade(req, sock, head, (ws) => room.join(ws)));
  await new Promise((r) => httpServer.listen(0, '127.0.0.1', r));
  const child = fork(__filename, ['--client'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const ask = (msg) =>
    new Promise((resolve, reject) => {
      const exited = (code) => reject(new Error(`client exited with ${code}`));
      child.once('exit', exited);
      child.once('message', (reply) => {
        child.off('exit', exited);
        resolve(reply);
      });
      child.send(msg);
    });
  await ask({ cmd: 'connect', url: `ws://127.0.0.1:${httpServer.address().port}`, sockets });
  while (host.stats().sockets < sockets) await new Promise((r) => setTimeout(r, 20));

  /** `callers` loops calling `method` for `seconds`; then what the clients received. */
  async function run(method) {
    await ask({ cmd: 'reset' });
    let calls = 0;
    const until = performance.now() + seconds * 1000;
    await Promise.all(
      Array.from({ length: callers }, async () => {
        while (performance.now() < until) {
          await room[method](process.hrtime.bigint().toString());
          calls++;
        }
      }),
    );
    const got = await ask({ cmd: 'collect', expect: calls * sockets });
    return { calls, messagesPerSec: got.received / got.seconds, p50: got.p50, p99: got.p99 };
  }

  const rows = { broadcast: [], loop: [] };
  for (let r = 0; r < Number(values.rounds); r++) {
    rows.broadcast.push(await run('broadcast'));
    rows.loop.push(await run('loop'));
  }
  child.kill();
  await host.close();
  httpServer.close();
  fs.rmSync(dir, { recursive: true, force: true });

  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const line = (label, rs) =>
    `${label}: ${Math.round(median(rs.map((x) => x.messagesPerSec))).toLocaleString('en-US')} messages/s delivered ` +
    `(${Math.round(median(rs.map((x) => x.calls / seconds))).toLocaleString('en-US')} broadcasts/s), ` +
    `delivery p50 ${median(rs.map((x) => x.p50)).toFixed(1)} ms, p99 ${median(rs.map((x) => x.p99)).toFixed(1)} ms`;
  const ratio = median(rows.broadcast.map((x) => x.messagesPerSec)) / median(rows.loop.map((x) => x.messagesPerSec));
  if (values.json) {
    const of = (rs) => ({ messagesPerSec: median(rs.map((x) => x.messagesPerSec)), p99: median(rs.map((x) => x.p99)) });
    fs.writeFileSync(values.json, JSON.stringify({ sockets, broadcast: of(rows.broadcast), loop: of(rows.loop), ratio }));
  }
  console.log(
    `broadcast: one worker, ${sockets.toLocaleString('en-US')} sockets in its room, ${callers} callers each writing and broadcasting; median of ${values.rounds} rounds of ${seconds} s, interleaved`,
  );
  console.log(`broadcast: ${line('ctx.broadcast', rows.broadcast)}`);
  console.log(`broadcast: ${line('a send per socket (getWebSockets loop)', rows.loop)}`);
  console.log(`broadcast: ctx.broadcast ÷ the loop, messages/s: ${ratio.toFixed(2)}×`);
}

function client() {
  const { connectClients } = require('./ws-clients');
  const clients = [];
  let latencies = [];
  let first = null;
  let last = null;
  const onMessage = (data) => {
    const now = process.hrtime.bigint();
    const sentAt = BigInt(data.toString().split(' ')[1]);
    latencies.push(Number(now - sentAt) / 1e6);
    first ??= now;
    last = now;
  };
  process.on('message', async (msg) => {
    if (msg.cmd === 'connect') {
      clients.push(
        ...(await connectClients(
          () => msg.url,
          msg.sockets,
          (ws) => ws.on('message', onMessage),
        )),
      );
      process.send({ open: clients.length });
    } else if (msg.cmd === 'reset') {
      latencies = [];
      first = last = null;
      process.send({});
    } else if (msg.cmd === 'collect') {
      const deadline = Date.now() + 30_000;
      while (latencies.length < msg.expect && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      const sorted = latencies.sort((a, b) => a - b);
      const at = (p) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
      const seconds = first === null ? 1 : Number(last - first) / 1e9;
      process.send({ received: sorted.length, seconds, p50: at(0.5), p99: at(0.99) });
    }
  });
}
