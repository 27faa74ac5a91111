'use strict';
// node torture/child.js <spec as JSON>
// spec: { dir, intents, round, seed, maxLive, durability, shards, alarmMinMs, alarmMaxMs, break }
//
// One round's workload, run until the parent SIGKILLs this process. It never
// stops by itself (an orphan exits when the IPC channel closes).
//
// Lanes run at once, each one call at a time: per worker, DATA_LANES lanes of
// sets, deletes, reads and document writes on slots only that lane touches,
// and one control lane of transactions (committed, nested, throwing), named
// alarms and relays into other workers. Before each call the lane appends its
// *intent* (the op, its step, the slots it may change) to the intents file
// with a synchronous write, so the parent knows of every call that may have
// reached the disk, even the one cut short by the kill; after the call
// resolves it sends the *acknowledgement* over IPC. A write's absence can only
// be a violation when it was acknowledged; an intent only widens what the
// parent accepts.
const fs = require('node:fs');
const path = require('node:path');
const { open } = require('..');
const W = require('./workers');
const { slowSyncLoaded } = require('../__test__/helpers/slowsync');

const spec = JSON.parse(process.argv[2]);
const { Tort, slot } = W;
const rand = W.rng(`${spec.seed}/child/${spec.round}`);
const fd = fs.openSync(spec.intents, 'a');
let n = 0;

/** Writes the intent line and returns its number and step. */
function intend(op, slots, extra) {
  n += 1;
  const s = spec.round * W.STEP_BASE + n;
  fs.writeSync(fd, `${JSON.stringify({ n, s, op, slots, ...extra })}\n`);
  return { n, s };
}

const send = (msg) => {
  if (process.connected) process.send(msg);
};
const violation = (what) => send({ violation: what });
// --break ack-early (a check of the checker): acknowledge each write as it is
// sent, before its commit, as a broken output gate would. The parent must
// then report lost writes.
const early = spec.break === 'ack-early';
const expected = (err) => err?.code === 'ERR_DURABLE_CYCLE' || /^planned failure/.test(err?.message ?? '');

async function dataLane(host, i, lane) {
  const wid = W.workerId(i);
  const stub = host.get(Tort, wid);
  /** key → last acknowledged step (null: deleted); a key absent here is not known this round. */
  const known = new Map();
  for (;;) {
    const r = rand.next();
    const key = W.dataKey(lane, rand.int(W.KEYS));
    const doc = W.docId(lane, rand.int(W.DOCS));
    if (r < 0.1 && known.has(key)) {
      // Read your own writes: this lane is the key's only writer.
      const got = await stub.getKey(key);
      const want = known.get(key) ?? undefined;
      if (got !== want) violation(`${wid} ${key}: read ${got} after its last acknowledged write left ${want}`);
      continue;
    }
    let op;
    let call;
    let result;
    if (r < 0.45) {
      op = intend('set', [[wid, slot.key(key), 'set']]);
      call = () => stub.setKey(key, op.s);
      result = () => known.set(key, op.s);
    } else if (r < 0.55) {
      op = intend('delete', [[wid, slot.key(key), 'del']]);
      call = () => stub.delKey(key);
      result = () => known.set(key, null);
    } else if (r < 0.75) {
      op = intend('put', [[wid, slot.doc(doc), 'set']]);
      call = () => stub.putDoc(doc, op.s);
    } else if (r < 0.85) {
      op = intend('remove', [[wid, slot.doc(doc), 'del']]);
      call = () => stub.delDoc(doc);
    } else {
      op = intend('update', [[wid, slot.doc(doc), 'set']]);
      call = () => stub.updateDoc(doc, op.s);
    }
    if (early) send({ ack: op.n, v: op.s });
    try {
      const v = await call();
      result?.();
      send({ ack: op.n, v });
    } catch (err) {
      known.delete(key);
      violation(`${wid} op ${op.n}: ${err?.code ?? ''} ${err?.stack ?? err}`);
    }
  }
}

async function controlLane(host, i) {
  const wid = W.workerId(i);
  const stub = host.get(Tort, wid);
  /** Alarm names this lane has set this round: a rearm moves one of them. */
  const armed = [];
  for (;;) {
    const r = rand.next();
    const syncMid = rand.chance(0.3);
    let op;
    let call;
    if (r < 0.3) {
      const nested = rand.chance(0.3);
      op = intend(
        'txn',
        nested
          ? [
              [wid, slot.txn, 'set'],
              [wid, slot.key('t:pre'), 'set'],
            ]
          : [[wid, slot.txn, 'set']],
        { nested, syncMid },
      );
      call = () => stub.txn(op.s, { nested, syncMid });
    } else if (r < 0.45) {
      op = intend('txnThrow', [[wid, slot.txn, 'noop']], { syncMid });
      call = () => stub.txnThrow(op.s, { syncMid });
    } else if (r < 0.7) {
      // A new name, or (one time in three) one set before, moved to a new
      // time, earlier or later: the index must never end up later than it.
      const at = Date.now() + spec.alarmMinMs + rand.int(spec.alarmMaxMs - spec.alarmMinMs);
      const rearm = armed.length > 0 && rand.chance(1 / 3);
      const name = rearm ? rand.pick(armed) : `a${spec.round}-${n + 1}`;
      if (!rearm) armed.push(name);
      op = intend('alarm', [], { w: wid, name, at, rearm });
      call = () => stub.arm(name, at);
    } else {
      let j = rand.int(W.WORKERS - 1);
      if (j >= i) j += 1;
      const to = W.workerId(j);
      op = intend('relay', [
        [to, slot.key(W.relayInKey(wid)), 'set'],
        [wid, slot.key(W.relayOutKey(to)), 'set'],
      ]);
      call = () => stub.relay(to, op.s);
    }
    if (early) send({ ack: op.n, v: op.s });
    try {
      const v = await call();
      send({ ack: op.n, v });
    } catch (err) {
      if (!expected(err)) violation(`${wid} op ${op.n}: ${err?.code ?? ''} ${err?.stack ?? err}`);
      else send({ refused: op.n, code: err.code ?? 'planned' });
    }
  }
}

/** The wiper's lane: sets, deletes, document writes, transactions and deleteAll, one at a time. */
async function wiperLane(host) {
  const wid = W.WIPER;
  const stub = host.get(Tort, wid);
  for (;;) {
    const r = rand.next();
    const name = W.wipeName(rand.int(W.WIPE_NAMES));
    let op;
    let call;
    if (r < 0.3) {
      op = intend('set', [[wid, slot.key(name), 'set']], { joint: true });
      call = () => stub.setKey(name, op.s);
    } else if (r < 0.45) {
      op = intend('delete', [[wid, slot.key(name), 'del']], { joint: true });
      call = () => stub.delKey(name);
    } else if (r < 0.7) {
      op = intend('put', [[wid, slot.doc(name), 'set']], { joint: true });
      call = () => stub.putDoc(name, op.s);
    } else if (r < 0.85) {
      const z0 = W.wipeName(0);
      op = intend(
        'txn',
        [
          [wid, slot.key(z0), 'set'],
          [wid, slot.doc(z0), 'set'],
          [wid, slot.key(W.wipeName(1)), 'set'],
        ],
        { joint: true },
      );
      call = () => stub.zTxn(op.s);
    } else {
      op = intend('deleteAll', [], { joint: true, wipe: true });
      call = () => stub.wipe();
    }
    if (early) send({ ack: op.n, v: op.s });
    try {
      const v = await call();
      send({ ack: op.n, v });
    } catch (err) {
      violation(`${wid} op ${op.n}: ${err?.code ?? ''} ${err?.stack ?? err}`);
    }
  }
}

(async () => {
  process.on('disconnect', () => process.exit(3));
  // With shards the workers run on worker threads and every write crosses
  // to the host thread as a message: the gate must hold there too.
  const shards = spec.shards ? { count: 2, module: path.join(__dirname, 'workers.js') } : undefined;
  const host = await open({ dir: spec.dir, maxLive: spec.maxLive, durability: spec.durability, shards });
  await host.startAlarms({ classes: [Tort] });
  host.on('alarmFailed', (err, info) => violation(`alarm failed: ${JSON.stringify(info)}: ${err?.stack ?? err}`));
  send({ ready: true, preloaded: slowSyncLoaded() });
  const lanes = [];
  for (let i = 0; i < W.WORKERS; i++) {
    for (let lane = 0; lane < W.DATA_LANES; lane++) lanes.push(dataLane(host, i, lane));
    lanes.push(controlLane(host, i));
  }
  lanes.push(wiperLane(host));
  await Promise.all(lanes);
})().catch((err) => {
  console.error(err);
  process.exit(2);
});
