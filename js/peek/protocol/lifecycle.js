'use strict';
// What a worker registers in its realm for one run: `api.initialize` and
// `api.onShutdown` hooks, and handlers from `api.subscribe` and
// `api.commands.on`. The rules (docs/peek.md, "The lifecycle and handlers"):
//
// - initialize hooks, subscriptions and command handlers are registered while
//   the module loads (its top level, through `app`); afterwards they are
//   refused with ERR_PEEK_LIFECYCLE. An onShutdown hook may also be added by
//   the entry, an initialize hook or a handler.
// - A run is: initialize hooks (in order) → the handlers matching the trigger,
//   else the entry → the waitUntil work → onShutdown hooks (in order).
// - A wake runs every subscription whose topic matches, in order; a command
//   runs its one handler (the value is the reply). A message that arrives
//   while a run goes on wakes the next run, as without handlers: a run is one
//   trigger, start to end.
// - A throw in an initialize hook ends the run with that error (the entry does
//   not run); in a handler or the entry, likewise; in an onShutdown hook it
//   fails a run that had not failed. Every onShutdown hook runs either way.
//   None runs when the run is killed (deadline, close, crash).
const { matches } = require('../topics');
const { codes, peekError } = require('../errors');

/** Whether the subscription `pattern` only hears topics that `granted` covers. */
function covered(granted, pattern) {
  if (!pattern.endsWith('*')) return matches(granted, pattern);
  const prefix = pattern.slice(0, -1);
  return granted.some((g) => g === pattern || (g.endsWith('*') && prefix.startsWith(g.slice(0, -1))));
}

class Lifecycle {
  #loading = true;
  #ended = false;
  #initialize = [];
  #shutdown = [];
  #subscriptions = [];
  #commands = new Map();
  #grants;

  /** @param {{ topics?: string[], commands?: string[] }} grants from the job: what the manifest grants */
  constructor(grants = {}) {
    this.#grants = { topics: grants.topics ?? [], commands: grants.commands ?? [] };
  }

  /** The realm's functions behind api.initialize, api.onShutdown, api.subscribe, api.commands.on. */
  locals() {
    return {
      initialize: (fn) => {
        this.#whileLoading('api.initialize(fn)');
        this.#initialize.push(checkFn('api.initialize(fn)', fn));
      },
      onShutdown: (fn) => {
        if (this.#ended) throw lifecycleError('api.onShutdown(fn): the run is ending; hooks are added before its shutdown begins');
        this.#shutdown.push(checkFn('api.onShutdown(fn)', fn));
      },
      subscribe: (topic, handler) => {
        this.#whileLoading('api.subscribe(topic, handler)');
        if (typeof topic !== 'string' || topic.length === 0) throw new TypeError('api.subscribe(topic, handler): topic must be a non-empty string');
        checkFn('api.subscribe(topic, handler)', handler);
        if (!covered(this.#grants.topics, topic)) {
          throw lifecycleError(`api.subscribe(${JSON.stringify(topic)}): not a topic the manifest grants (capabilities.pubsub.subscribe: ${JSON.stringify(this.#grants.topics)})`);
        }
        const sub = { topic, handler };
        this.#subscriptions.push(sub);
        return () => {
          const i = this.#subscriptions.indexOf(sub);
          if (i >= 0) this.#subscriptions.splice(i, 1);
        };
      },
      'commands.on': (name, handler) => {
        this.#whileLoading('api.commands.on(name, handler)');
        checkFn('api.commands.on(name, handler)', handler);
        if (!this.#grants.commands.includes(name)) {
          throw lifecycleError(`api.commands.on(${JSON.stringify(name)}): not a command the manifest lists (commands: ${JSON.stringify(this.#grants.commands)})`);
        }
        if (this.#commands.has(name)) throw lifecycleError(`api.commands.on(${JSON.stringify(name)}): a handler is already registered`);
        this.#commands.set(name, handler);
      },
    };
  }

  /** Runs the initialize hooks; from here on only onShutdown hooks may be added. */
  async initialize(ctx) {
    this.#loading = false;
    for (const fn of this.#initialize) await fn(ctx);
  }

  /**
   * What answers `trigger` instead of the entry: a function (ctx) → value, or null.
   * @param {import('../../../peek').Trigger} trigger
   */
  handlerFor(trigger) {
    if (trigger.kind === 'command') {
      const h = this.#commands.get(trigger.name);
      return h === undefined ? null : (ctx) => h(trigger.params, ctx);
    }
    if (trigger.kind === 'wake') {
      const subs = this.#subscriptions.filter((s) => matches([s.topic], trigger.topic));
      if (subs.length === 0) return null;
      return async (ctx) => {
        let value;
        for (const s of subs) value = await s.handler(trigger.message, ctx);
        return value;
      };
    }
    return null;
  }

  get hasShutdown() {
    return this.#shutdown.length > 0;
  }

  /** The run is ending: no more onShutdown hooks. */
  end() {
    this.#loading = false;
    this.#ended = true;
  }

  /** Runs every onShutdown hook, in order; resolves with the first error, or null. A hook cannot add another. */
  async shutdown(ctx) {
    this.end();
    let first = null;
    for (const hook of this.#shutdown) {
      try {
        await hook(ctx);
      } catch (err) {
        first ??= err;
      }
    }
    return first;
  }

  #whileLoading(what) {
    if (!this.#loading) throw lifecycleError(`${what}: registrations are made while the module loads (at its top level, through app), not once the run has started`);
  }
}

function checkFn(what, fn) {
  if (typeof fn !== 'function') throw new TypeError(`${what}: must be given a function`);
  return fn;
}

function lifecycleError(message) {
  return peekError(codes.LIFECYCLE, message);
}

module.exports = { Lifecycle };
