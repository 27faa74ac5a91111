'use strict';
// What a worker sees as `this.ctx`: its id, stubs for other workers (calls
// through them carry this call's chain), and its hibernating sockets. One
// class for every host; each host hands it a port saying how it does these
// things: the in-process host (api/host.js), a shard (shards/runtime.js),
// a Durable Object (cloudflare/runtime.js).

/**
 * @typedef {object} ContextPort
 * @property {string} id the worker's id
 * @property {(Class: Function, id: string) => object} get a stub for another worker, carrying this call's chain
 * @property {(ws: object, tags?: string[]) => object} accept hands a socket to the host for this worker; its handle
 * @property {(tag?: string) => object[]} list this worker's open accepted sockets
 * @property {(ws: object) => string[]} tags the tags a socket was accepted with
 * @property {(pair: { request: string, response: string } | null) => void} autoResponse
 */

/** What a worker sees as `this.ctx`. */
class WorkerContext {
  #port;

  /** @param {ContextPort} port */
  constructor(port) {
    this.#port = port;
  }

  /**
   * Hands a server-side `ws` socket (or its handle) to the host, for this
   * worker: messages reach webSocketMessage even after the worker has been
   * evicted. Returns the handle.
   * @param {object} ws
   * @param {string[]} [tags]
   */
  acceptWebSocket(ws, tags) {
    return this.#port.accept(ws, tags);
  }

  /** This worker's open accepted sockets, those with `tag` if given. */
  getWebSockets(tag) {
    return this.#port.list(tag);
  }

  /** The tags a socket was accepted with. */
  getTags(ws) {
    return this.#port.tags(ws);
  }

  /** Answers a message whose text is exactly `request` with `response`, on the host, without waking this worker; null clears. */
  setWebSocketAutoResponse(pair) {
    this.#port.autoResponse(pair);
  }

  /** This worker's id. */
  get id() {
    return this.#port.id;
  }

  /** A stub for another worker; calls through it carry this call's chain. */
  get(Class, id) {
    return this.#port.get(Class, id);
  }
}

module.exports = { WorkerContext };
