'use strict';
// node powercut-child.js <scenario> <dir> <round> [durability]
// The process under test of files/powercut.test.js: opens <dir> (on a
// power-cut mount) and writes without end until the parent cuts the power.
// Every acknowledged operation (a call that resolved) is appended to the file
// named by ACK_FILE, with a synchronous write, before anything else happens
// on that chain: that file lives outside the mount, so after the SIGKILL it
// holds exactly what this process saw acknowledged. Sends { ready: true }
// over IPC at its first acknowledgement.
//
// Scenarios (one line per acknowledgement):
//   counter   4 Counter workers, 12 callers each: `c <worker> <value>`
//   create    new Cell workers r<round>-<i>, each written once by 8 callers: `n <id> <i>`
//   books     4 Books workers posting transactions serially: `b <worker> <seq>`
//   evict     24 Counter workers, maxLive 4, 8 callers on random workers: `c <worker> <value>`
//   delete    Cell workers written, then deleted by host.delete or wiped by deleteAll:
//             `p <id>` (written), `d <id>` (host.delete resolved), `w <id>` (deleteAll resolved)
//   alarms    Clock workers, alarms set far in the future: `a <worker> <name> <at>`
//   relaxed   (durability 'relaxed') new Counter workers r<round>-<i>, each incremented
//             twice: `c <id> <value>`
const fs = require('node:fs');
const { open } = require('../..');
const { Counter, Cell, Books, Clock } = require('./powercut-workers');

const [scenario, dir, round, durability = 'full'] = process.argv.slice(2);
const ackFd = fs.openSync(process.env.ACK_FILE, 'a');
let acked = false;
const ack = (line) => {
  fs.writeSync(ackFd, `${line}\n`);
  if (!acked) process.send({ ready: true });
  acked = true;
};
const forever = 1e9;

const parallel = (n, body) => Promise.all(Array.from({ length: n }, (_, i) => body(i)));

const scenarios = {
  async counter(host) {
    await parallel(4 * 12, async (i) => {
      const w = i % 4;
      const c = host.get(Counter, `c${w}`);
      for (let k = 0; k < forever; k++) ack(`c c${w} ${await c.inc()}`);
    });
  },

  async create(host) {
    let next = 0;
    await parallel(8, async () => {
      for (;;) {
        const i = next++;
        const id = `r${round}-${i}`;
        await host.get(Cell, id).put('v', i);
        ack(`n ${id} ${i}`);
      }
    });
  },

  async books(host) {
    await parallel(4, async (w) => {
      const b = host.get(Books, `b${w}`);
      for (let seq = (await b.last()) + 1; ; seq++) ack(`b b${w} ${await b.post(seq)}`);
    });
  },

  async evict(host) {
    let seed = Number(round) * 7919 + 1;
    const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    await parallel(8, async () => {
      for (;;) {
        const w = Math.floor(rand() * 24);
        ack(`c e${w} ${await host.get(Counter, `e${w}`).inc()}`);
      }
    });
  },

  async delete(host) {
    let next = 0;
    await parallel(6, async () => {
      for (;;) {
        const i = next++;
        const id = `r${round}-${i}`;
        const cell = host.get(Cell, id);
        await cell.put('a', i);
        await cell.put('b', i);
        ack(`p ${id}`);
        if (i % 2 === 0) {
          await host.delete(Cell, id);
          ack(`d ${id}`);
        } else {
          await cell.wipe();
          ack(`w ${id}`);
        }
      }
    });
  },

  async alarms(host) {
    const base = Date.now() + 3_600_000;
    let next = 0;
    await parallel(6, async () => {
      for (;;) {
        const i = next++;
        const w = `k${i % 10}`;
        const name = `r${round}-${i}`;
        const at = base + i;
        await host.get(Clock, w).arm(name, at);
        ack(`a ${w} ${name} ${at}`);
      }
    });
  },

  async relaxed(host) {
    let next = 0;
    await parallel(8, async () => {
      for (;;) {
        const id = `r${round}-${next++}`;
        const c = host.get(Counter, id);
        ack(`c ${id} ${await c.inc()}`);
        ack(`c ${id} ${await c.inc()}`);
      }
    });
  },
};

(async () => {
  // An orphan (the parent gone) stops instead of writing for ever.
  process.on('disconnect', () => process.exit(3));
  const host = await open({ dir, durability, ...(scenario === 'evict' ? { maxLive: 4 } : {}) });
  await scenarios[scenario](host);
  process.exit(4);
})().catch((err) => {
  console.error(err);
  process.exit(2);
});
