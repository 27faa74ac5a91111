'use strict';
// A Durable Object namespace binding (`env.ROOMS`): ids, and stubs that reach
// the one live instance of each id in this process.

const { namespaceIds } = require('./ids');
const { Actor } = require('./actor');
const { markObjectStub, property } = require('./rpc');

// The host's own ways in: keys, not names, so that `env.ROOMS` shows an app
// Cloudflare's members only.
const kAlarmActor = Symbol('alarmActor');
const kClose = Symbol('close');

/** `env.<BINDING>`: ids and stubs for one Durable Object class. */
class DurableObjectNamespace {
  #ids;
  #o;
  /** @type {Map<string, Actor>} the live object of each id */
  #live = new Map();
  /** @type {Map<string, Promise<void>>} broken or evicted objects closing their files */
  #closing = new Map();
  /** @type {Map<string, import('./hibernation').Hibernation>} the hibernatable sockets of evicted objects */
  #dormant = new Map();

  /**
   * @param {{ host: object, Class: Function, className: string, sql: boolean, uniqueKey: string, env: object }} o
   */
  constructor(o) {
    this.#o = o;
    this.#ids = namespaceIds(o.uniqueKey);
  }

  idFromName(name) {
    return this.#ids.idFromName(...arguments);
  }

  idFromString(hex) {
    return this.#ids.idFromString(...arguments);
  }

  newUniqueId(options) {
    return this.#ids.newUniqueId(options);
  }

  jurisdiction(j) {
    this.#ids.jurisdiction(j);
    return this;
  }

  /** @param {import('./ids').DurableObjectId} id */
  get(id) {
    return stub(this.#actorOf.bind(this, id), id);
  }

  /** @param {string} name */
  getByName(name) {
    return this.get(this.idFromName(name));
  }

  /**
   * The live object of the id string `hex`, for its alarm: started if there
   * is none, with the name its alarm recorded. Throws if `hex` is not an id
   * of this namespace.
   * @param {string} hex
   */
  [kAlarmActor](hex) {
    return this.#live.get(hex) ?? this.#actorOf(this.#ids.idFromString(hex), true);
  }

  /** The live object of `id`, started if there is none. */
  #actorOf(id, forAlarm = false) {
    const key = id.toString();
    let actor = this.#live.get(key);
    if (actor === undefined) {
      const named = forAlarm ? (name) => this.#ids.idFromStringNamed(key, name) : null;
      const hibernation = this.#dormant.get(key);
      this.#dormant.delete(key);
      actor = new Actor({ ...this.#o, named, hibernation, after: this.#closing.get(key), onBroken: (a) => this.#broken(key, a), onEvict: (a) => this.#evicted(key, a) }, id);
      this.#live.set(key, actor);
    }
    return actor;
  }

  #broken(key, actor) {
    if (this.#live.get(key) !== actor) return;
    this.#live.delete(key);
    this.#closeOf(key, actor);
  }

  /** The object left memory (./residents.js): its hibernatable sockets wait for the next instance. */
  #evicted(key, actor) {
    if (this.#live.get(key) !== actor) return;
    this.#live.delete(key);
    if (actor.hibernating()) {
      this.#dormant.set(key, actor.hibernation);
      actor.hibernation.sleep({ event: (run) => this.#actorOf(actor.id).event(run) });
    }
    this.#closeOf(key, actor);
  }

  /** Closes `actor`'s file; the next instance of `key` waits for it (the file has one owner). */
  #closeOf(key, actor) {
    const closed = actor.close().finally(() => {
      if (this.#closing.get(key) === closed) this.#closing.delete(key);
    });
    this.#closing.set(key, closed);
  }

  /** Closes every live object (the host is closing). */
  async [kClose]() {
    const actors = [...this.#live.values()];
    this.#live.clear();
    // Sockets of evicted objects: nothing will answer them now.
    for (const h of this.#dormant.values()) h.disconnect();
    this.#dormant.clear();
    await Promise.all([...actors.map((a) => a.close()), ...this.#closing.values()]);
  }
}

/**
 * A stub: `fetch(request)`, and every other property an RPC method (called)
 * or a getter of the class (awaited).
 * @param {(/* no args *\/) => Actor} actorOf
 * @param {import('./ids').DurableObjectId} id
 */
function stub(actorOf, id) {
  const target = {
    id,
    name: id.name,
    fetch: (input, init) => actorOf().fetch(input instanceof Request && init === undefined ? input : new Request(input, init)),
  };
  return markObjectStub(
    new Proxy(target, {
      get(t, prop) {
        if (typeof prop === 'symbol' || prop in t) return t[prop];
        // Not thenable: `await stub` gives the stub.
        if (prop === 'then') return undefined;
        return property(
          (args) => actorOf().call(prop, args),
          () => actorOf().read(prop),
        );
      },
    }),
  );
}

module.exports = { DurableObjectNamespace, kAlarmActor, kClose };
