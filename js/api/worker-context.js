'use strict';
// What a worker sees as `this.ctx`: its id, stubs for other workers (calls
// through them carry this call's chain), and its hibernating sockets. One
// class for every host; each host hands it a port saying how it does these
// things: the in-process host (api/host.js), a shard (shards/runtime.js),
// a Durable Object (cloudflare/runtime.js).

/**
 * How a host does what a ctx offers, for any of its workers: one object per
 * host, shared by every worker's ctx (a ctx holds the port and its worker).
 * @typedef {object} ContextPort
 * @property {(worker: object, Class: Function, id: string, options?: { timeout?: number }) => object} get a stub for another worker, carrying this call's chain
 * @property {(worker: object, ws: object, tags?: string[]) => object} accept hands a socket to the host for this worker; its handle
 * @property {(worker: object, tag?: string) => object[]} list this worker's open accepted sockets
 * @property {(worker: object, ws: object) => string[]} tags the tags a socket was accepted with
 * @property {(worker: object, pair: { request: string, response: string } | null) => void} autoResponse
 * @property {(worker: object, reason: unknown, epoch: number) => never} abort resets the worker whose instance of `epoch` asks; throws
 * @property {(worker: object, message: string | ArrayBuffer | ArrayBufferView, options?: object) => number} broadcast sends to the worker's matching sockets
 */

/** How the runtime aborts an abandoned instance's `ctx.signal` (internal, not API). */
const ABORT = Symbol('durable-workers.abort');

/** What a worker sees as `this.ctx`: one per instance. */
class WorkerContext {
  #port;
  #worker;
  /** The worker's reset count when this instance was made. */
  #epoch;
  /** @type {AbortController | null} made when `signal` is first read */
  #controller = null;
  #aborted = null;

  /**
   * @param {ContextPort} port the host's
   * @param {{ id: string }} worker the worker, as the host knows it
   */
  constructor(port, worker) {
    this.#port = port;
    this.#worker = worker;
    this.#epoch = worker.epoch ?? 0;
  }

  /**
   * Aborts when this instance is abandoned: a call or hook of it overran its
   * deadline, or it called `abort()`. Its reason is the error the caller got.
   * @returns {AbortSignal}
   */
  get signal() {
    if (this.#controller === null) {
      this.#controller = new AbortController();
      if (this.#aborted !== null) this.#controller.abort(this.#aborted);
    }
    return this.#controller.signal;
  }

  /**
   * Resets the worker, as Cloudflare's `ctx.abort()` does: this instance is
   * abandoned (its writes not yet in a started commit are dropped, and its
   * later writes, calls and sends refused), the call running gets
   * ERR_DURABLE_RESET, and the next call runs on a fresh instance loaded
   * from the file. Throws that error, so the code calling it stops.
   * @param {unknown} [reason]
   * @returns {never}
   */
  abort(reason) {
    return this.#port.abort(this.#worker, reason, this.#epoch);
  }

  /** @internal the runtime abandoned this instance */
  [ABORT](err) {
    this.#aborted = err;
    this.#controller?.abort(err);
  }

  /**
   * Hands a server-side `ws` socket (or its handle) to the host, for this
   * worker: messages reach webSocketMessage even after the worker has been
   * evicted. Returns the handle.
   * @param {object} ws
   * @param {string[]} [tags]
   */
  acceptWebSocket(ws, tags) {
    return this.#port.accept(this.#worker, ws, tags);
  }

  /** This worker's open accepted sockets, those with `tag` if given. */
  getWebSockets(tag) {
    return this.#port.list(this.#worker, tag);
  }

  /**
   * Sends `message` to every open socket this worker accepted (those with
   * any of `tags`, if given; not those in `except`), in the order they were
   * accepted, once this worker's writes so far have committed: one wait for
   * all of them. Returns how many sockets it is sent to.
   * @param {string | ArrayBuffer | ArrayBufferView} message
   * @param {{ tags?: string[], except?: object | object[] }} [options]
   * @returns {number}
   */
  broadcast(message, options) {
    return this.#port.broadcast(this.#worker, message, options);
  }

  /** The tags a socket was accepted with. */
  getTags(ws) {
    return this.#port.tags(this.#worker, ws);
  }

  /** Answers a message whose text is exactly `request` with `response`, on the host, without waking this worker; null clears. */
  setWebSocketAutoResponse(pair) {
    this.#port.autoResponse(this.#worker, pair);
  }

  /** This worker's id. */
  get id() {
    return this.#worker.id;
  }

  /**
   * A stub for another worker; calls through it carry this call's chain, and
   * get at most what is left of this call's deadline.
   * @param {Function} Class
   * @param {string} id
   * @param {{ timeout?: number }} [options] as host.get's
   */
  get(Class, id, options) {
    return this.#port.get(this.#worker, Class, id, options);
  }
}

module.exports = { WorkerContext, ABORT };
