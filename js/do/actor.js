'use strict';
// One live Durable Object: its instance, its gates and its storage. Events
// (RPC calls, `fetch`) enter through the input gate; what they return leaves
// through the output gate, once the writes made before it are durable. A
// failed commit or `ctx.abort()` breaks the object: every output waiting is
// rejected, and the next event starts a fresh instance from its file.

const { InputGate } = require('./input-gate');
const { OutputGate, Turns } = require('./turns');
const { DurableObjectStorage, internals } = require('./storage');
const { actorContext } = require('./websocket');
const { Hibernation } = require('./hibernation');
const { holdUntilEnded, endIfDone } = require('./bodies');
const { Response: WorkerdResponse } = require('./response');
const { DurableError, codes } = require('../api/errors');
const { invoke, read, method, here } = require('./rpc');
const { pendingTimers } = require('./timers');
const { DurableObjectState } = require('./state');

/** Methods Cloudflare keeps for the runtime: not callable over RPC. */
const RESERVED = new Set(['fetch', 'connect', 'alarm', 'webSocketMessage', 'webSocketClose', 'webSocketError', 'dup', 'constructor']);
const reserved = (name) => (RESERVED.has(name) ? Promise.reject(new TypeError(`'${name}' is a reserved method and cannot be called over RPC.`)) : null);

class Actor {
  #ready;
  /** Whether #ready has resolved; events still waiting for it or for their file to open. */
  #started = false;
  #starting = 0;
  #instance = null;
  #storage = null;
  #turns = null;
  #native = null;
  /** Events started and not yet answered. */
  #events = 0;
  /** Response bodies returned and not yet read to their end (./bodies.js), and each one's weak reference. */
  #streams = 0;
  #bodies = new Set();
  /** Why this instance takes no more events (evicted), or null. */
  #gone = null;

  /**
   * @param {{ host: object, Class: Function, className: string, sql: boolean, env: object, onBroken: (actor: Actor) => void,
   *           onEvict: (actor: Actor) => void, named?: ((name: string) => import('./ids').DurableObjectId) | null,
   *           hibernation?: Hibernation }} o
   *   named: started for an alarm, by its id string alone: the id with the name its alarm recorded;
   *   hibernation: the sockets and settings of the instance evicted before this one
   * @param {import('./ids').DurableObjectId} id
   */
  constructor(o, id) {
    this.o = o;
    this.id = id;
    this.input = new InputGate();
    this.output = new OutputGate(() => this.#broken());
    this.pending = new Set();
    this.timers = new Set(); // set by its events (./timers.js): pending ones keep it in memory
    this.hibernation = o.hibernation?.adopt(this) ?? new Hibernation(this, o.log);
    this.#ready = this.#start().then(() => {
      this.#started = true;
    });
    // Reported to the first event, not here.
    this.#ready.catch(() => {});
  }

  async #start() {
    const { host, className, sql, Class, env, after } = this.o;
    // A broken predecessor closes its connection first: the file has one owner.
    await after;
    this.#native = host.native.object(`do.${className}`, this.id.toString());
    await this.#native.load();
    if (this.o.named && this.id.name === undefined) {
      // Started by an alarm after a restart: `ctx.id.name` as the app made the id.
      const name = this.#native.alarmName();
      if (name !== null) this.id = this.o.named(name);
    } else if (this.o.host.alarms !== undefined) {
      // The index is moved earlier before the commit that sets an alarm is
      // written, so it lacks an alarm only when the catalog was rebuilt
      // without this object (or damaged): opening the object puts that right.
      const at = this.#native.getAlarm();
      if (at !== null) this.o.host.alarms.earlier(`do.${className}`, this.id.toString(), at, false);
    }
    this.#turns = new Turns(this.#native, host.commits, this.output);
    this.#storage = new DurableObjectStorage(this.#native, this.#turns, {
      sql,
      hasAlarmHandler: () => typeof this.#instance?.alarm === 'function' || this.#instance === null,
      blockConcurrencyWhile: (fn) => this.input.blockConcurrencyWhile(fn),
      idName: () => this.id.name,
      alarmWritten: (at) => this.#alarmWritten(at),
    });
    const ctx = new DurableObjectState(this, this.#storage);
    // The constructor is the first event: what it starts under
    // blockConcurrencyWhile holds every later one.
    this.#instance = actorContext.run(this, () => new Class(ctx, env));
  }

  /** The live instance (null until constructed). */
  get instance() {
    return this.#instance;
  }

  /**
   * Runs one event: `body(instance)` once the gate lets it in; its result
   * once the writes made before it are durable.
   * @template T
   * @param {(instance: any) => T | Promise<T>} body
   * @returns {Promise<T>}
   */
  async event(body) {
    // A reference kept past eviction (an alarm's retry): refused, never put back in memory.
    if (this.#gone !== null) throw this.#gone;
    this.#events++;
    this.o.host.residents?.touch(this);
    try {
      // Each wait only when there is something to wait for (an await costs a
      // call a microtask); an event behind one still waiting to start waits too.
      if (!this.#started || this.#starting > 0) {
        this.#starting++;
        try {
          await this.#ready;
        } finally {
          this.#starting--;
        }
      }
      // A parked file opens again here, off the JS thread (./open-files.js).
      const opening = this.o.host.files?.use(this);
      if (opening || this.#starting > 0) {
        this.#starting++;
        try {
          await opening;
        } finally {
          this.#starting--;
        }
      }
      const wait = this.input.enter();
      if (wait !== null) {
        try {
          await wait;
        } finally {
          this.input.entered();
        }
      }
      this.#turns.check();
      // Sockets accepted (and sends made) inside the event know their object.
      const result = await actorContext.run(this, () => body(this.#instance));
      if (this.output.busy || this.output.broken !== null) await this.output.wait();
      return result;
    } finally {
      if (--this.#events === 0) this.o.host.residents?.rest(this);
    }
  }

  /** The object's NativeObject (null until started). */
  get native() {
    return this.#native;
  }

  /**
   * Whether the object may leave memory now (./residents.js): constructed,
   * idle, and none of a response body still streaming, output or `waitUntil`
   * work, a pending timer, a standard-API socket open (hibernatable ones stay).
   */
  evictable() {
    // A body read to its end by something other than the HTTP front (a Worker's `await res.text()`) lets go here.
    if (this.#streams > 0) for (const ref of this.#bodies) endIfDone(ref.deref());
    return this.#instance !== null && this.idle() && !this.#holding();
  }

  /** Work that keeps it in memory. */
  #holding() {
    return this.#streams > 0 || this.pending.size > 0 || pendingTimers(this.timers) || this.input.busy || this.output.busy || this.hibernation.holdsStandard();
  }

  /** Whether it holds hibernatable sockets: it is evicted sooner, as workerd hibernates it. */
  hibernating() {
    return this.hibernation.open() > 0;
  }

  /**
   * Leaves memory: the namespace drops it and closes its file; its next
   * event makes a new instance. What this instance left running (a timer,
   * an interval) may go on, as Node has no isolate to tear down, but its
   * storage is refused from now on.
   */
  evict() {
    const who = `Durable Object ${this.o.className} ${this.id.name === undefined ? this.id.toString() : JSON.stringify(this.id.name)}`;
    this.#gone = new DurableError(
      codes.CLOSED,
      `${who}: this instance was evicted from memory (idle, or past maxLive) and may no longer use its storage; the object's next event runs in a new instance`,
    );
    this.#turns?.retire(this.#gone);
    this.o.onEvict(this);
  }

  /** No event running and nothing open on its storage: its file may be parked. */
  idle() {
    return this.#events === 0 && this.#turns !== null && this.#turns.idle();
  }

  /** An RPC call of the method `name` (./rpc.js); its result once its writes are durable. @param {string} name @param {unknown[]} args */
  call(name, args) {
    return reserved(name) ?? invoke(this, (instance) => [instance, method(instance, name)], args, here());
  }

  /** `await stub.name`: a member of the class (a getter), not an instance field. @param {string} name */
  read(name) {
    return reserved(name) ?? read(this, (instance) => instance, name);
  }

  /** @param {Request} request */
  fetch(request) {
    return this.event(async (instance) => {
      if (typeof instance.fetch !== 'function') throw new TypeError('Handler does not export a fetch() function.');
      const response = await instance.fetch(request);
      this.hold(response);
      return response;
    });
  }

  /** A body it returned (a Response's, or a stream) keeps it in memory until read to its end (./bodies.js). */
  hold(value) {
    // A body kept whole (a string or bytes) is in memory already: nothing of the object's to wait for.
    if (WorkerdResponse.isWhole(value)) return;
    const body = value instanceof Response ? value.body : value instanceof ReadableStream ? value : null;
    if (body === null) return;
    const ref = new WeakRef(body);
    this.#streams++;
    this.#bodies.add(ref);
    holdUntilEnded(body, () => {
      this.#streams--;
      this.#bodies.delete(ref);
    });
  }

  /**
   * Runs the object's alarm if it is due, as an event: `alarm({ retryCount, isRetry })`.
   * While the handler runs, `getAlarm()` reads null unless it sets a new one;
   * after it succeeds, the alarm that fired is deleted unless it did.
   * Resolves once the event's writes are durable.
   * @param {number} retryCount
   * @returns {Promise<{ state: 'none' | 'later' | 'ran' | 'threw', at: number | null, changed: boolean, alarm: number | null }>}
   *   alarm: the object's alarm afterwards; changed: a throwing handler set or deleted the alarm
   */
  async fireAlarm(retryCount) {
    const r = await this.event(async (instance) => {
      const at = this.#native.getAlarm();
      if (at === null) return { state: 'none', at };
      if (at > Date.now()) return { state: 'later', at };
      if (typeof instance.alarm !== 'function') {
        // The class lost its handler since the alarm was set: nothing can run it.
        internals(this.#storage).dropFiredAlarm(at);
        return { state: 'none', at };
      }
      const storage = this.#storage;
      internals(storage).alarmFiring = true;
      try {
        await instance.alarm({ scheduledTime: at, retryCount, isRetry: retryCount > 0 });
      } catch {
        const changed = !internals(storage).alarmFiring;
        internals(storage).alarmFiring = false;
        return { state: 'threw', at, changed };
      }
      if (internals(storage).alarmFiring) {
        internals(storage).alarmFiring = false;
        internals(storage).dropFiredAlarm(at);
      }
      return { state: 'ran', at };
    });
    return { changed: false, ...r, alarm: this.#native.getAlarm() };
  }

  /**
   * Deletes the alarm that fired at `at` (null: whichever is due) after its last retry failed.
   * @param {number | null} at
   * @returns {Promise<number | null>} the object's alarm afterwards
   */
  async dropAlarm(at) {
    await this.event(() => {
      const cur = this.#native.getAlarm();
      if (cur !== null && (at === null ? cur <= Date.now() : cur === at)) internals(this.#storage).dropFiredAlarm(cur);
    });
    return this.#native.getAlarm();
  }

  /**
   * The app wrote the alarm (`at`, null: deleted) in the open turn: the
   * index moves earlier first (outputs wait for it), and is set exactly
   * once the turn's commit is durable.
   * @param {number | null} at
   */
  #alarmWritten(at) {
    const alarms = this.o.host.alarms;
    if (alarms === undefined) return;
    const cls = `do.${this.o.className}`;
    const hex = this.id.toString();
    if (at !== null) {
      const indexed = alarms.earlier(cls, hex, at);
      this.output.lockWhile(indexed);
      this.#turns.commitAfter(indexed);
    }
    this.output.wait().then(
      () => {
        let now;
        try {
          now = this.#native.getAlarm();
        } catch {
          // Closed: the index stays early, and the next pass puts it right.
          return;
        }
        alarms.exact(cls, hex, now, true);
      },
      () => {},
    );
  }

  /** Breaks the object: outputs waiting fail, and the host starts a fresh one for the next event. */
  break(err) {
    this.output.break(err);
  }

  #broken() {
    this.input.release();
    this.hibernation.disconnect();
    this.#turns?.abandon();
    try {
      this.#native?.rollback();
    } catch {
      // Already closed by a failed sync.
    }
    this.o.onBroken(this);
  }

  /** Checkpoints and closes the object's file. */
  close() {
    this.o.host.files?.forget(this);
    this.o.host.residents?.forget(this);
    if (this.#native === null) return Promise.resolve();
    return this.#ready
      .catch(() => {})
      .then(() => this.output.drained())
      .then(() => this.o.host.commits.submit((id) => this.#native.close(id)))
      .then(
        () => {},
        () => {},
      );
  }
}

module.exports = { Actor };
