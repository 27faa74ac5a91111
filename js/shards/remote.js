'use strict';
// A worker of a sharded class, as the host thread sees it.
//
// It stands where a LiveWorker stands for the host (the live set, eviction,
// the bounded mailbox, the wait-for graph) and owns the worker's database
// handle; the worker's code, instance and resident state are on a shard. The
// mailbox is here: entries go to the shard one at a time, each once the
// previous one's code has run, so when a shard dies only the entry it was
// running is lost (its caller gets ERR_DURABLE_SHARD_LOST) and the entries
// queued behind it run on a replacement, which starts the worker again from
// its file. Writes the dead shard had sent finish first: the handle is closed
// only after them, and the new shard's worker loads what they left.
//
// Status, and what comes next: 'live' → 'failed' (its start or a commit
// failed on the shard; queued calls are refused, then it closes) or
// 'closing' → 'closed'. A lost shard is not a status: the next entry moves.
const { Mailbox } = require('../runtime/mailbox');
const { QueuedWorker } = require('../runtime/queued-worker');
const { DurableError, codes, fromNative, label, nativeCode } = require('../api/errors');
const { waitAtMost, ORDER_WAIT_MS } = require('../alarms/order');
const { OP, serializeError, deserializeError, buf } = require('./protocol');
const { tracedCommit, tracedSocketEvent } = require('../observe/trace');
const { packChanges } = require('../native/changes');

const NO_FILE = Object.freeze({ exists: false, keys: [], tags: [], values: [], alarms: null, backfill: [] });
/** No gate on this thread: the shard gates its own output. */
const NO_GATE = Object.freeze({ flush: () => null });

function docsBuffers(d) {
  if (d === undefined || d === null) return d;
  return { ...d, docs: d.docs.map(buf), columns: buf(d.columns) };
}

class RemoteWorker extends QueuedWorker {
  state = NO_GATE;
  /** @type {import('./pool').Shard | null} */
  #shard = null;
  #native = null;
  /** The next entry starts the worker on its shard (first entry, or after a loss). */
  #fresh = true;
  /** Storage operations in flight for the shard, to finish before the handle closes. */
  #ops = new Set();
  #cleanup = null;
  /** Calls whose code ran and whose result has not come back: cid → settle. */
  #results = new Map();
  #nextCid = 1;
  /** The entry sent and not yet run: how to end the wait for it. */
  #inflight = null;

  /**
   * @param {import('../runtime/host-port').HostPort} host
   * @param {{ Class: Function, name: string }} binding
   * @param {string} id
   * @param {string} key
   * @param {number} slot
   */
  constructor(host, binding, id, key, slot) {
    super();
    this.host = host;
    this.binding = binding;
    this.id = id;
    this.key = key;
    this.slot = slot;
    this.who = label(binding.name, id);
    this.status = 'live';
    this.failure = null;
    this.mailbox = new Mailbox(
      host.mailboxLimit,
      (entry) => this.#run(entry),
      () => host.busy(this),
      () => host.idle(this),
    );
  }

  async #run(e) {
    if (e.kind === 'close') return this.#close(e);
    if (this.failure !== null) return this.#refuse(e, this.failure);
    if (e.kind === 'alarm') await waitAtMost(e.after, ORDER_WAIT_MS);
    let shard;
    try {
      shard = await this.#attach();
    } catch (err) {
      return this.#refuse(e, err);
    }
    const wire = { kind: e.kind };
    if (e.kind === 'call') {
      const cid = this.#nextCid++;
      this.#results.set(cid, { resolve: e.resolve, reject: e.reject });
      Object.assign(wire, {
        cid,
        method: e.method,
        args: e.args.map((a) => this.host.sockets.markerOf(a) ?? a),
        frame: { chain: e.frame.chain, keys: e.frame.keys, trace: e.frame.trace?.traceId, timeout: e.frame.timeout, outer: e.frame.outer },
      });
    } else if (e.kind === 'event') {
      // The socket as the shard mirrors it, described when the event leaves
      // (in-process workers never pay for it).
      const { handle, ...desc } = e.desc;
      wire.desc = { ...desc, socket: this.host.sockets.markerOf(handle) };
    }
    // A call holds the shard twice: until its code has run, and until its result is back.
    if (e.kind === 'event') await tracedSocketEvent(this.binding.name, this.id, e.desc, () => this.#send(shard, wire));
    else await this.#send(shard, wire, e.kind === 'call' ? 2 : 1);
    if (e.kind === 'alarm') {
      e.started();
      e.resolve();
    }
  }

  /** Sends one entry and waits until its code has run, or the shard is lost. */
  #send(shard, wire, holds = 1) {
    const msg = { op: OP.entry, key: this.key, className: this.binding.name, id: this.id, fresh: this.#fresh, entry: wire };
    if (this.#fresh) msg.sockets = this.host.sockets.snapshot(this.key);
    this.#fresh = false;
    return new Promise((resolve) => {
      this.#inflight = (outcome) => {
        this.#inflight = null;
        shard.release();
        resolve(outcome);
      };
      shard.post(msg);
      // After the entry: the watchdog's first heartbeat queues behind it, so
      // an entry that never yields has already missed one when it is due.
      for (let i = 0; i < holds; i++) shard.hold();
    });
  }

  /** Places the worker on its shard, starting it there if needed. */
  async #attach() {
    if (this.#shard !== null && this.#shard.alive) return this.#shard;
    if (this.#cleanup !== null) {
      await this.#cleanup;
      this.#cleanup = null;
    }
    const shard = await this.host.pool.shardFor(this.key);
    this.#shard = shard;
    this.#fresh = true;
    this.#native = this.host.native.worker(this.binding.name, this.id);
    shard.workers.set(this.key, this);
    return shard;
  }

  #refuse(e, err) {
    if (e.kind === 'call') e.reject(err.code === codes.SHARD_LOST && !err.message.startsWith(this.who) ? this.#named(err) : err);
    else if (e.kind === 'alarm') {
      e.started();
      e.resolve();
    }
  }

  #named(err) {
    return new DurableError(codes.SHARD_LOST, `${this.who}: ${err.message}`, { cause: err });
  }

  async #close(e) {
    this.status = 'closing';
    let existed = false;
    let error = null;
    let done = false;
    if (this.#shard !== null && this.#shard.alive) {
      const out = await this.#send(this.#shard, { kind: 'close', reason: this.failure === null ? e.reason : null, destroy: e.destroy });
      if (out.lost === undefined) {
        done = true;
        if (out.ok) existed = out.existed;
        else error = deserializeError(out.error);
      }
    }
    if (!done) {
      // No shard holds the worker (never placed, or lost): close what is here.
      await (this.#cleanup ?? this.#closeNative());
      if (e.destroy) {
        try {
          existed = await this.host.native.worker(this.binding.name, this.id).destroy();
        } catch (err) {
          error = fromNative(err, this.who);
        }
      }
    }
    this.#shard?.workers.delete(this.key);
    this.#shard = null;
    this.#native = null;
    this.status = 'closed';
    e.resolve(error === null ? existed : Promise.reject(error));
  }

  async #closeNative() {
    await Promise.allSettled([...this.#ops]);
    const n = this.#native;
    this.#native = null;
    if (n !== null) await this.host.commits.submit((cid) => n.close(cid)).catch(() => {});
  }

  /** The shard this worker was on is gone. */
  lost(err) {
    this.#shard = null;
    this.#fresh = true;
    const mine = this.#named(err);
    for (const r of this.#results.values()) r.reject(mine);
    this.#results.clear();
    this.#inflight?.({ lost: mine });
    this.#cleanup = this.#closeNative();
  }

  /** A message from the shard about this worker. */
  onMessage(shard, msg) {
    switch (msg.op) {
      case OP.ran:
        return this.#inflight?.({ ran: true });
      case OP.closed:
        return this.#inflight?.(msg);
      case OP.result: {
        const r = this.#results.get(msg.cid);
        if (r === undefined) return;
        this.#results.delete(msg.cid);
        shard.release();
        if (msg.ok) r.resolve(msg.value);
        else r.reject(deserializeError(msg.error));
        return;
      }
      case OP.failed:
        if (this.failure === null) {
          this.failure = deserializeError(msg.error);
          this.status = 'failed';
          this.host.failed(this);
        }
        return;
      case OP.rpc:
        return this.#track(this.#serve(msg.method, msg.args)).then(
          (value) => shard.post({ op: OP.reply, rid: msg.rid, ok: true, value }),
          (err) => shard.post({ op: OP.reply, rid: msg.rid, ok: false, error: serializeError(err) }),
        );
      case OP.write:
      case OP.closeFile: {
        const n = this.#native;
        const run = (cid) => (msg.op === OP.write ? n.write(cid, ...packChanges(this.#changes(msg.changes))) : n.close(cid));
        const submit = () => this.host.commits.submit(run);
        let p;
        if (n === null) p = Promise.reject(new DurableError(codes.CLOSED, `${this.who}: closed`));
        else if (msg.op === OP.closeFile) p = submit();
        // A shard's commit is published here, on the host thread, attributed to the host's traced call.
        else p = tracedCommit(this.binding.name, this.id, msg.changes, this.host.traceOf(msg.trace), undefined, this.host.metrics.commitSeries(this.binding.name), submit);
        this.#track(p).then(
          () => {
            if (msg.op === OP.closeFile && this.#native === n) this.#native = null;
            shard.post({ op: OP.done, cid: msg.cid, code: '', message: '' });
          },
          (err) => shard.post({ op: OP.done, cid: msg.cid, code: nativeCode(err), message: err.message }),
        );
        return;
      }
    }
  }

  #track(p) {
    this.#ops.add(p);
    const drop = () => this.#ops.delete(p);
    p.then(drop, drop);
    return p;
  }

  async #serve(method, args) {
    // A worker reset on its shard closed its file and loads it again, through a new handle.
    if (method === 'load' && this.#native === null) this.#native = this.host.native.worker(this.binding.name, this.id);
    const n = this.#native;
    if (n === null) throw new DurableError(codes.CLOSED, `${this.who}: the worker's file is closed`);
    switch (method) {
      case 'load':
        return n.exists() ? n.load() : NO_FILE;
      case 'register':
        return n.register();
      case 'destroy':
        return n.destroy();
      case 'query': {
        const q = args[0];
        return n.query({ ...q, values: q.values === undefined ? undefined : buf(q.values), overlay: docsBuffers(q.overlay) });
      }
      case 'backfill':
        return n.backfill(args[0], args[1], args[2], buf(args[3]));
      default:
        throw new Error(`unknown storage request ${method}`);
    }
  }

  #changes(c) {
    return { ...c, docs: docsBuffers(c.docs) };
  }
}

module.exports = { RemoteWorker, NO_GATE };
