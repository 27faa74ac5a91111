'use strict';
// What a worker sees as `this.ctx`: its id, stubs for other workers (calls
// through them carry this call's chain), and its hibernating sockets.

/** What a worker sees as `this.ctx`. */
class WorkerContext {
  #host;
  #worker;
  #sockets;
  constructor(host, worker, sockets) {
    this.#host = host;
    this.#worker = worker;
    this.#sockets = sockets;
  }

  /**
   * Hands a server-side `ws` socket (or its handle) to the host, for this
   * worker: messages reach webSocketMessage even after the worker has been
   * evicted. Returns the handle.
   * @param {object} ws
   * @param {string[]} [tags]
   */
  acceptWebSocket(ws, tags) {
    return this.#sockets.accept(this.#worker, ws, tags);
  }

  /** This worker's open accepted sockets, those with `tag` if given. */
  getWebSockets(tag) {
    return this.#sockets.list(this.#worker.key, tag);
  }

  /** The tags a socket was accepted with. */
  getTags(ws) {
    return this.#sockets.tags(ws);
  }

  /** Answers a message whose text is exactly `request` with `response`, on the host, without waking this worker; null clears. */
  setWebSocketAutoResponse(pair) {
    this.#sockets.setAutoResponse(this.#worker.key, this.#worker.who, pair);
  }

  /** This worker's id. */
  get id() {
    return this.#worker.id;
  }

  /** A stub for another worker; calls through it carry this call's chain. */
  get(Class, id) {
    return this.#host.get(Class, id);
  }
}

module.exports = { WorkerContext };
