'use strict';
// `ctx`, what a Durable Object instance sees as `this.ctx`: its id, its
// storage, the hibernation API, blockConcurrencyWhile, waitUntil and abort,
// each a door into its Actor (./actor.js).

/** How long a `blockConcurrencyWhile()` callback may run before its object is reset: Cloudflare's 30 s (a test shortens it). */
const limits = { blockConcurrencyMs: 30_000 };
/** Cloudflare's message for it. */
const BLOCKED_TOO_LONG = 'A call to blockConcurrencyWhile() in a Durable Object waited for too long. The call was canceled and the Durable Object was reset.';

/** What an instance sees as `this.ctx`. */
class DurableObjectState {
  #actor;

  /**
   * @param {import('./actor').Actor} actor
   * @param {import('./storage').DurableObjectStorage} storage
   */
  constructor(actor, storage) {
    this.#actor = actor;
    this.id = actor.id;
    this.storage = storage;
  }

  // The WebSocket Hibernation API (./hibernation.js): the sockets stay open
  // while the object is evicted, and their next event wakes it (./residents.js).

  /**
   * @param {import('./websocket').WebSocket} ws
   * @param {string[]} [tags]
   */
  acceptWebSocket(ws, tags) {
    this.#actor.hibernation.accept(ws, tags);
  }

  /** @param {string} [tag] */
  getWebSockets(tag) {
    return this.#actor.hibernation.getWebSockets(tag);
  }

  getTags(ws) {
    return this.#actor.hibernation.getTags(ws);
  }

  setWebSocketAutoResponse(pair) {
    this.#actor.hibernation.setAutoResponse(pair);
  }

  getWebSocketAutoResponse() {
    return this.#actor.hibernation.getAutoResponse();
  }

  getWebSocketAutoResponseTimestamp(ws) {
    return this.#actor.hibernation.getAutoResponseTimestamp(ws);
  }

  setHibernatableWebSocketEventTimeout(ms) {
    this.#actor.hibernation.setEventTimeout(ms);
  }

  getHibernatableWebSocketEventTimeout() {
    return this.#actor.hibernation.getEventTimeout();
  }

  /**
   * @template T
   * @param {() => Promise<T>} fn
   */
  blockConcurrencyWhile(fn) {
    // Past the limit the object is reset, as on Cloudflare: the callback is
    // left to itself (Node cannot stop it; its storage is refused from then
    // on), and every event waiting on the gate fails with the same error.
    const limit = { limitMs: limits.blockConcurrencyMs, tooLong: () => new Error(BLOCKED_TOO_LONG) };
    const done = this.#actor.input.blockConcurrencyWhile(fn, limit).catch((err) => {
      this.#actor.break(err);
      throw err;
    });
    // Constructors often do not await it (as on Cloudflare, where a rejection
    // left unhandled is logged): its failure resets the object either way.
    done.catch(() => {});
    return done;
  }

  /** @param {Promise<unknown>} p keeps the object from eviction until it settles */
  waitUntil(p) {
    this.#actor.pending.add(p);
    Promise.resolve(p).finally(() => this.#actor.pending.delete(p));
  }

  /**
   * Breaks the object now: its writes not yet committed are dropped, and
   * everything waiting on it fails. Node cannot end the running code as
   * workerd does; the error thrown here can be caught, but the object is
   * dead either way.
   * @param {unknown} [reason]
   */
  abort(reason) {
    const err = new Error(reason === undefined ? 'Application called abort() to reset Durable Object.' : String(reason));
    this.#actor.break(err);
    throw err;
  }
}

module.exports = { DurableObjectState, limits };
