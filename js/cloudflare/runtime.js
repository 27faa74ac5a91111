'use strict';
// toDurableObject(Class): a Durable Object class around an unchanged
// DurableWorker class, for workerd and Cloudflare. One instance of the
// Durable Object is one worker: it makes the user's instance (with this.id,
// this.state, this.ctx) on the first event, and runs every call, alarm and
// socket event through a mailbox, one at a time, as the Node host does.
//
// What the platform gives and this file relies on: the output gate (a call's
// result, an RPC it makes and a socket message it sends wait for its writes
// to be confirmed); the synchronous ctx.storage.kv and ctx.storage.sql;
// ctx.storage.transaction rolling both back; one platform alarm per object;
// WebSocket hibernation; RPC stubs from idFromName.
//
// What it adds: the mailbox (workerd interleaves a Durable Object's requests
// at every await that is not storage; the Node host does not), cycle
// detection along one call chain (ERR_DURABLE_CYCLE instead of a deadlock),
// named alarms (./alarms.js), the caps (./state.js), and the checks and codes
// of the Node host.
const { DurableError, codes, label } = require('../api/errors');
const { NONE, TIMED_OUT, abortError, deadlineOf, expiredError, timeoutError, within } = require('../runtime/deadline');
const { CLASS_NAME, alarmBackoff, mailboxFull } = require('../api/rules');
const { Mailbox: Queue } = require('../runtime/mailbox');
const { construct, callableMethods } = require('../api/worker');
const { WorkerContext } = require('../api/worker-context');
const { declaredCollections } = require('../collections/declarations');
const { CloudflareState } = require('./state');
const { NamedAlarms } = require('./alarms');
const { SocketSide, WebSocketHandle } = require('./sockets');
const wire = require('./wire');
const { inChain, currentChain, CALL_HEADER, register, isWorkerClass, stubFor, hostOf, handleCall } = require('./calls');

const MAILBOX = 1024;
/** Names the Durable Object itself answers to: a worker method by one of these names cannot be mapped. */
const RESERVED = new Set(['fetch', '__call', '__deleteAll', '__connect']);

const RT = Symbol('durable-workers runtime');

/**
 * The mailbox (runtime/mailbox.js, as on Node): entries run one at a time, in
 * arrival order. A call is refused when MAILBOX entries already wait (the
 * running one not counted); alarms, socket events and deletes are forced in.
 */
class Mailbox {
  #queue = new Queue(
    MAILBOX,
    (job) => job(),
    () => {},
    () => {},
  );

  /** Runs `fn` in its turn; resolves or rejects with its outcome. */
  run(who, fn, force = false) {
    return new Promise((resolve, reject) => {
      const job = () => Promise.resolve().then(fn).then(resolve, reject);
      if (!this.#queue.push(job, force)) reject(mailboxFull(who(), MAILBOX));
    });
  }
}

/** What a worker's `this.ctx` does on a Durable Object, where one object is one worker: the worker is its Runtime. */
const CTX_PORT = Object.freeze({
  get: (rt, Class, id, options) => stubFor(rt.env, Class, id, () => [...currentChain(), rt.who()], options),
  accept: (rt, ws, tags) => rt.sockets.accept(ws, tags),
  list: (rt, tag) => rt.sockets.list(tag),
  tags: (rt, ws) => rt.sockets.tags(ws),
  autoResponse: (rt, pair) => rt.sockets.setAutoResponse(pair),
  broadcast: (rt, message, options) => rt.sockets.broadcast(message, options),
  // The platform's own reset: the object is discarded with its unconfirmed writes and made again on the next event.
  abort: (rt, reason) => {
    const err = abortError(rt.who(), reason);
    rt.ctx.abort(err.message);
    throw err;
  },
});

/** One Durable Object instance's side of a worker. */
class Runtime {
  constructor(Class, entry, ctx, env) {
    this.Class = Class;
    this.entry = entry;
    this.ctx = ctx;
    this.env = env;
    this.mailbox = new Mailbox();
    this.alarms = new NamedAlarms(ctx.storage, () => this.who(), entry.methods);
    this.id = typeof ctx.id?.name === 'string' && ctx.id.name.length > 0 ? ctx.id.name : null;
    this.instance = null;
    this.sockets = new SocketSide(ctx, () => this.who());
  }

  who() {
    return label(this.entry.name, this.id ?? '?');
  }

  /** The worker's id: given by the first call, kept in dw_meta for the events that carry none. */
  resolveId(given) {
    if (this.id !== null) return this.id;
    const sql = this.ctx.storage.sql;
    sql.exec('CREATE TABLE IF NOT EXISTS dw_meta(k TEXT PRIMARY KEY NOT NULL, v) WITHOUT ROWID');
    const rows = [...sql.exec("SELECT v FROM dw_meta WHERE k = 'id'")];
    if (rows.length) this.id = rows[0].v;
    else if (typeof given === 'string') {
      sql.exec("INSERT INTO dw_meta(k, v) VALUES ('id', ?)", given);
      this.id = given;
    } else {
      throw new DurableError(codes.ID, `${this.entry.name}: an event arrived for an object that was never called by id (reach it with ctx.get / hostOf(env).get first)`);
    }
    return this.id;
  }

  /** Makes the user's instance and runs start(), once per wake. */
  async materialize() {
    if (this.instance !== null) return this.instance;
    const state = new CloudflareState(() => this.who(), this.ctx.storage, this.entry.collections, this.alarms);
    state._ensureTables();
    const wctx = new WorkerContext(CTX_PORT, this);
    const instance = construct(this.Class, { id: this.id, state, ctx: wctx });
    if (typeof instance.start === 'function') await instance.start();
    this.instance = instance;
    return instance;
  }

  /**
   * A call from a stub (or a native RPC call, with no chain). `limits`: the
   * stub's timeout and its caller's deadline (runtime/deadline.js); a call
   * that overruns is cut off by the platform's reset, as on Node.
   */
  call(method, args, chain, id, limits) {
    const who = () => label(this.entry.name, this.id ?? id ?? '?');
    if (typeof method !== 'string' || !this.entry.methods.has(method)) {
      const why =
        typeof method === 'string' && (method === 'start' || method === 'stop' || method === 'alarm' || method.startsWith('webSocket'))
          ? 'is a lifecycle hook, not callable'
          : 'is not a method of the class';
      return Promise.reject(new DurableError(codes.METHOD, `${who()}: ${this.entry.name}.${String(method)}() ${why}`));
    }
    if (!Array.isArray(args)) args = [];
    const mine = who();
    if (Array.isArray(chain) && chain.includes(mine)) {
      return Promise.reject(new DurableError(codes.CYCLE, `a call to ${mine} would wait on itself: ${[...chain, mine].join(' → ')} (a worker runs one call at a time, so this would never finish)`));
    }
    const calls = Array.isArray(chain) ? chain : [];
    const outer = typeof limits?.outer === 'number' ? limits.outer : undefined;
    return this.mailbox.run(who, async () => {
      if (outer !== undefined && outer <= Date.now()) throw expiredError(who(), method);
      // start() is not the call's: its deadline starts once the instance is made, as on Node.
      const w = await inChain(calls, undefined, () => {
        this.resolveId(id);
        return this.materialize();
      });
      const began = Date.now();
      const deadline = deadlineOf(typeof limits?.timeout === 'number' ? limits.timeout : undefined, outer, began);
      if (deadline <= began) throw expiredError(who(), method);
      const run = inChain(calls, deadline === NONE ? undefined : deadline, async () => w[method](...args));
      if (deadline === NONE) return run;
      return within(run, deadline, TIMED_OUT).catch((err) => {
        if (err !== TIMED_OUT) throw err;
        const timedOut = timeoutError(who(), `${method}()`, Date.now() - began, deadline - began);
        this.ctx.abort(timedOut.message);
        throw timedOut;
      });
    });
  }

  /**
   * The platform alarm: every due named alarm, as one mailbox entry. A
   * failure before or after the user's alarm() (start() throwing, the id,
   * re-arming) is retried here with the named alarms' backoff, the count kept
   * in dw_meta: the platform's own retries stop after six, which would leave
   * every named alarm unfired.
   */
  fireAlarms() {
    return this.mailbox.run(
      () => this.who(),
      () =>
        inChain([], undefined, async () => {
          try {
            this.resolveId(undefined);
            const w = await this.materialize();
            await this.alarms.fire(
              async (info, call) => {
                if (call !== null) return void (await w[call.method](...call.args));
                if (typeof w.alarm !== 'function') throw new TypeError(`${this.entry.name} has alarms set but no alarm() method`);
                await w.alarm(info);
              },
              (err, info) =>
                console.error(
                  `durable-workers: ${this.who()}: ${info.schedule === undefined ? `alarm ${JSON.stringify(info.name)}` : `schedule ${info.schedule} (${info.method}())`} failed (attempt ${info.attempt}${info.retryAt === null ? '' : `, retry at ${new Date(info.retryAt).toISOString()}`}):`,
                  err?.stack ?? err,
                ),
            );
            this.#meta().exec("DELETE FROM dw_meta WHERE k = 'alarmFailures'");
          } catch (err) {
            let n;
            try {
              const sql = this.#meta();
              let pending = false;
              try {
                pending = [...sql.exec('SELECT 1 FROM dw_alarms LIMIT 1')].length > 0;
              } catch {
                // no dw_alarms table: no named alarm was ever set
              }
              if (!pending) throw err;
              n = ([...sql.exec("SELECT v FROM dw_meta WHERE k = 'alarmFailures'")][0]?.v ?? 0) + 1;
              sql.exec("INSERT INTO dw_meta(k, v) VALUES ('alarmFailures', ?) ON CONFLICT(k) DO UPDATE SET v = excluded.v", n);
              const retryAt = Date.now() + alarmBackoff(n);
              await this.ctx.storage.setAlarm(retryAt);
              console.error(`durable-workers: ${this.who()}: the alarms could not run (attempt ${n}, retry at ${new Date(retryAt).toISOString()}):`, err?.stack ?? err);
            } catch {
              throw err; // storage itself fails: leave it to the platform's retry
            }
          }
        }),
      true,
    );
  }

  #meta() {
    const sql = this.ctx.storage.sql;
    sql.exec('CREATE TABLE IF NOT EXISTS dw_meta(k TEXT PRIMARY KEY NOT NULL, v) WITHOUT ROWID');
    return sql;
  }

  /** A socket event from the hibernation API, as one mailbox entry. */
  socketEvent(run) {
    return this.mailbox.run(
      () => this.who(),
      () =>
        inChain([], undefined, async () => {
          this.resolveId(undefined);
          const w = await this.materialize();
          await run(w);
        }),
      true,
    );
  }

  /**
   * hostOf(env).delete: empties the object's storage (ctx.storage.deleteAll:
   * every table, key and the platform alarm) and drops the live instance, so
   * the next call starts afresh. Resolves to whether it held anything (a key,
   * a document, an alarm); storage is emptied either way.
   */
  async destroy() {
    const storage = this.ctx.storage;
    const sql = storage.sql;
    // Existing means holding something: a key, a document, a named alarm (a read-only call leaves only empty tables).
    let existed = !storage.kv.list()[Symbol.iterator]().next().done;
    const tables = [...sql.exec("SELECT name FROM sqlite_master WHERE type = 'table' AND (name LIKE 'c\\_%' ESCAPE '\\' OR name = 'dw_alarms')")].map((r) => r.name);
    for (const t of tables) {
      if (existed) break;
      existed = [...sql.exec(`SELECT 1 FROM "${t}" LIMIT 1`)].length > 0;
    }
    if (!existed) existed = (await storage.getAlarm()) !== null;
    await storage.deleteAlarm();
    await storage.deleteAll();
    this.instance = null;
    this.alarms = new NamedAlarms(storage, () => this.who(), this.entry.methods);
    this.id = typeof this.ctx.id?.name === 'string' && this.ctx.id.name.length > 0 ? this.ctx.id.name : null;
    return existed;
  }

  /** A WebSocket upgrade handed over by hostOf(env).connect: the method decides whether to accept. */
  async connect(request) {
    let spec;
    try {
      spec = wire.decode(request.headers.get(CALL_HEADER));
    } catch {
      return new Response('durable-workers: a WebSocket upgrade must come through hostOf(env).connect()', { status: 400 });
    }
    const pair = new WebSocketPair();
    const [client, server] = Object.values(pair);
    const handle = this.sockets.handleFor(server);
    try {
      await this.call(spec.method, [handle, ...spec.args], spec.chain, spec.id);
    } catch (err) {
      return new Response(`${err?.code ?? 'Error'}: ${err?.message ?? err}`, { status: 500, headers: { 'x-durable-workers-error': err?.code ?? 'Error' } });
    }
    if (!this.sockets.isAccepted(server)) {
      return new Response(`${this.who()}: ${spec.method}() did not accept the socket (call this.ctx.acceptWebSocket(ws))`, { status: 400 });
    }
    return new Response(null, { status: 101, webSocket: client });
  }
}

/**
 * Makes the toDurableObject of one platform base class.
 * @param {new (ctx: any, env: any) => object} Base DurableObject from cloudflare:workers
 */
function makeToDurableObject(Base) {
  /**
   * A Durable Object class around `Class`, an unchanged DurableWorker class.
   * @param {Function} Class
   * @param {{ binding?: string }} [options] the env binding of its namespace (default: its name)
   */
  return function toDurableObject(Class, options = {}) {
    if (!isWorkerClass(Class)) {
      throw new DurableError(codes.NAME, `toDurableObject(Class): ${Class?.name ?? String(Class)} is not a class extending DurableWorker`);
    }
    const name = Object.hasOwn(Class, 'workerName') ? Class.workerName : Class.name;
    if (typeof name !== 'string' || !CLASS_NAME.test(name)) {
      throw new DurableError(codes.NAME, `worker class name ${JSON.stringify(name)} is not usable: it must match [A-Za-z0-9_-]{1,64} (set static workerName to choose one)`);
    }
    const methods = callableMethods(Class);
    for (const m of methods) {
      if (RESERVED.has(m) || m.startsWith('__')) {
        throw new DurableError(codes.METHOD, `${name}.${m}() cannot be mapped to a Durable Object: ${m} is what the Durable Object itself answers to on Cloudflare; rename the method`);
      }
    }
    const entry = { name, binding: options.binding ?? name, methods, collections: declaredCollections(Class, name) };
    register(Class, entry);

    class Worker extends Base {
      constructor(ctx, env) {
        super(ctx, env);
        Object.defineProperty(this, RT, { value: new Runtime(Class, entry, ctx, env) });
      }

      __call(method, args, chain, id, limits) {
        return this[RT].call(method, args, chain, id, limits);
      }

      __deleteAll(id) {
        const rt = this[RT];
        return rt.mailbox.run(
          () => label(name, rt.id ?? id ?? '?'),
          () => rt.destroy(),
          true,
        );
      }

      fetch(request) {
        if (request.headers.get('upgrade')?.toLowerCase() === 'websocket' && request.headers.has(CALL_HEADER)) return this[RT].connect(request);
        return new Response(`${name}: a durable worker answers calls, not HTTP (use hostOf(env).get(${name}, id))`, { status: 404 });
      }

      alarm() {
        return this[RT].fireAlarms();
      }

      webSocketMessage(ws, data) {
        const rt = this[RT];
        const payload = typeof data === 'string' ? data : toBuffer(data);
        return rt.socketEvent((w) => w.webSocketMessage?.(rt.sockets.handleFor(ws), payload));
      }

      webSocketClose(ws, code, reason, wasClean) {
        const rt = this[RT];
        return rt.socketEvent((w) => w.webSocketClose?.(rt.sockets.handleFor(ws), code, reason, wasClean));
      }

      webSocketError(ws, err) {
        const rt = this[RT];
        return rt.socketEvent((w) => w.webSocketError?.(rt.sockets.handleFor(ws), err));
      }
    }
    for (const m of methods) {
      Object.defineProperty(Worker.prototype, m, {
        value: function (...args) {
          return this[RT].call(m, args, [], undefined);
        },
        writable: true,
        configurable: true,
      });
    }
    Object.defineProperty(Worker, 'name', { value: name });
    return Worker;
  };
}

function toBuffer(data) {
  const { Buffer } = require('node:buffer');
  return Buffer.from(data instanceof ArrayBuffer ? data : data.buffer);
}

module.exports = { makeToDurableObject, hostOf, handleCall, isWorkerClass, WebSocketHandle, CALL_HEADER };
