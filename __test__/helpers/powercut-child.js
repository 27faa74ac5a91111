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
//   serial    1 Counter worker, one caller, each increment after the last (its commits are
//             alone, so written and synced on the JS thread): `c s0 <value>`, and every
//             50th acknowledgement `i <stats().commitsInline>`
//   evict     24 Counter workers, maxLive 4, 8 callers on random workers: `c <worker> <value>`
//   delete    Cell workers written, then deleted by host.delete or wiped by deleteAll:
//             `p <id>` (written), `d <id>` (host.delete resolved), `w <id>` (deleteAll resolved)
//   alarms    Clock workers, alarms set far in the future: `a <worker> <name> <at>`
//   relaxed   (durability 'relaxed') new Counter workers r<round>-<i>, each incremented
//             twice: `c <id> <value>`
//   churn     new Clock workers each round, one per caller, each setting a new alarm, then deleting its
//             previous one, at random times (the earliest moves both ways):
//             `a <worker> <name> <at>`, `x <worker> <name>`
//   fire      Alarmed workers, alarms due within 300 ms, fired by this process:
//             `a <worker> <name> <at>`
//   rebuild   opens the directory, sets an alarm on a new Clock worker, closes,
//             deletes the catalog, again and again (each open rebuilds it): `a <worker> x <at>`
//   repair    new Clock workers with alarms, then again and again: damage the
//             catalog's header, run repair(): `a <worker> x <at>`, `r <workers>`
//   ledger    Ledger workers whose declaration changes each round (a backfill on
//             the first wake), posting transactions: `s` (started), `b <worker> <seq>`
const fs = require('node:fs');
const path = require('node:path');
const { open } = require('../..');
const { repair } = require('../../js/tools/repair');
const { Counter, Cell, Books, Clock, Alarmed, ledgerClass, ledgerField } = require('./powercut-workers');
const { ackWriter } = require('./powercut-rounds');

const [scenario, dir, round, durability = 'full'] = process.argv.slice(2);
const { ack } = ackWriter();
const forever = 1e9;

const parallel = (n, body) => Promise.all(Array.from({ length: n }, (_, i) => body(i)));

let seed = Number(round) * 7919 + 1;
/** A seeded generator (an LCG is enough for picking times and workers). */
const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;

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

  async serial(host) {
    const c = host.get(Counter, 's0');
    for (let k = 1; ; k++) {
      ack(`c s0 ${await c.inc()}`);
      if (k % 50 === 0) ack(`i ${host.stats().commitsInline}`);
    }
  },

  async evict(host) {
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
  async churn(host) {
    const base = Date.now() + 3_600_000;
    await parallel(6, async (c) => {
      const w = `r${round}-k${c}`;
      const clock = host.get(Clock, w);
      for (let n = 0; ; n++) {
        const name = `r${round}-c${c}-${n}`;
        const at = base + Math.floor(rand() * 1_000_000);
        await clock.arm(name, at);
        ack(`a ${w} ${name} ${at}`);
        if (n === 0) continue;
        const previous = `r${round}-c${c}-${n - 1}`;
        await clock.disarm(previous);
        ack(`x ${w} ${previous}`);
      }
    });
  },

  async fire(host) {
    await host.startAlarms({ classes: [Alarmed] });
    let next = 0;
    await parallel(4, async () => {
      for (;;) {
        const i = next++;
        const w = `f${i % 6}`;
        const name = `r${round}-${i}`;
        const at = Date.now() + Math.floor(rand() * 300);
        await host.get(Alarmed, w).arm(name, at);
        ack(`a ${w} ${name} ${at}`);
      }
    });
  },
};

/** Scenarios that open (and close) the directory themselves. */
const owners = {
  async rebuild() {
    for (let i = 0; ; i++) {
      const host = await open({ dir, durability });
      const w = `r${round}-${i}`;
      const at = Date.now() + 3_600_000 + i;
      await host.get(Clock, w).arm('x', at);
      ack(`a ${w} x ${at}`);
      await host.close();
      for (const side of ['', '-wal', '-shm']) fs.rmSync(path.join(dir, `_registry.db${side}`), { force: true });
    }
  },

  async repair() {
    const host = await open({ dir, durability });
    await parallel(10, async (i) => {
      const w = `r${round}-${i}`;
      const at = Date.now() + 3_600_000 + i;
      await host.get(Clock, w).arm('x', at);
      ack(`a ${w} x ${at}`);
    });
    await host.close();
    for (;;) {
      // What a damaged disk does to a header: repair() must move it aside.
      const fd = fs.openSync(path.join(dir, '_registry.db'), 'r+');
      fs.writeSync(fd, Buffer.alloc(100, 0xa5), 0, 100, 0);
      fs.fsyncSync(fd);
      fs.closeSync(fd);
      // The damage sits a while before anyone repairs it: cuts land there too.
      await new Promise((resolve) => setTimeout(resolve, 20));
      const report = await repair(dir);
      ack(`r ${report.workers}`);
    }
  },

  async ledger() {
    const Ledger = ledgerClass(ledgerField(Number(round)));
    const host = await open({ dir, durability });
    // Before the first wake, so that a cut can come during the backfill.
    ack('s');
    await parallel(4, async (w) => {
      const l = host.get(Ledger, `l${w}`);
      for (let seq = (await l.last()) + 1; ; seq++) ack(`b l${w} ${await l.post(seq)}`);
    });
  },
};

(async () => {
  // An orphan (the parent gone) stops instead of writing for ever.
  process.on('disconnect', () => process.exit(3));
  if (owners[scenario] !== undefined) {
    await owners[scenario]();
    process.exit(4);
  }
  const host = await open({ dir, durability, ...(scenario === 'evict' ? { maxLive: 4 } : {}) });
  await scenarios[scenario](host);
  process.exit(4);
})().catch((err) => {
  console.error(err);
  process.exit(2);
});
