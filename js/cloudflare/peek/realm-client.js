'use strict';
// Node side: one run's realm in workerd, seen from the host. The realm
// protocol is ../../peek/protocol/host-side.js, the same one the Node
// adapter's process realm speaks over IPC; here it goes over a WebSocket to
// the worker's service. The run's api calls come back as messages and are
// answered against the api object the host built, which stays in Node with
// the store and the credential it closes over.
const { RealmClient } = require('../../peek/protocol/host-side');
const { codes, peekError } = require('../../peek/errors');
const wire = require('../wire');

class WorkerdRealm extends RealmClient {
  #ws;
  #opened;
  #closed;

  /**
   * @param {string} url ws://…/peek/realm/<name>
   * @param {string} token the deployment's admin token
   * @param {import('../../../peek').Manifest} manifest
   * @param {{ signal: AbortSignal, log: (record: object) => void }} options
   */
  constructor(url, token, manifest, { signal, log }) {
    super(manifest, { log });
    const WebSocket = require('ws');
    this.#ws = new WebSocket(url, { headers: { authorization: `Bearer ${token}` } });
    this.#opened = new Promise((resolve, reject) => {
      this.#ws.once('open', resolve);
      this.#ws.once('error', (err) => reject(peekError(codes.CRASHED, `worker ${manifest.name}: cannot open its realm in workerd (${err.message})`)));
      this.#ws.once('unexpected-response', (req, res) => reject(peekError(codes.CRASHED, `worker ${manifest.name}: workerd answered ${res.statusCode} to the realm's upgrade`)));
    });
    this.#opened.catch(() => {});
    this.#closed = new Promise((resolve) => this.#ws.once('close', resolve));
    this.#closed.then(() =>
      this._ended((byUs) => peekError(codes.CRASHED, `worker ${manifest.name}: the realm's socket closed before the run finished; ${byUs ? 'it was stopped' : 'workerd ended it'}`)),
    );
    this.#ws.on('message', (data) => {
      let m;
      try {
        m = wire.decode(String(data));
      } catch {
        return;
      }
      this._receive(m);
    });
    this._forwardAbort(signal);
  }

  ready() {
    return this.#opened;
  }

  _send(m) {
    if (this.#ws.readyState !== 1) return;
    this.#ws.send(wire.encode(m, () => `a ${m.t} message to the realm`));
  }

  /**
   * Ends the run: after `graceMs` (so an aborted signal can reach the
   * worker), closes the socket. From then on nothing of the run reaches the
   * host. A synchronous loop in the isolate is not stopped by this (local
   * workerd has no CPU limit; Cloudflare's stops it).
   */
  async close({ graceMs = 0 } = {}) {
    if (this.status === 'closed') return;
    if (graceMs > 0) await Promise.race([this.#closed, new Promise((r) => setTimeout(r, graceMs))]);
    this._markDone();
    try {
      this.#ws.close(1000, 'run over');
    } catch {
      this.#ws.terminate();
    }
    const t = setTimeout(() => this.#ws.terminate(), 1000);
    await this.#closed;
    clearTimeout(t);
    this._markClosed();
  }
}

module.exports = { WorkerdRealm };
