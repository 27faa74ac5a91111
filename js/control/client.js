'use strict';
// The control socket's client: finds the socket of the process serving a
// durable directory (socket-path.js) and sends it requests (protocol in
// server.js). Every failure is a DurableError ERR_DURABLE_CONTROL whose
// message says which of the usual causes it is: no process serves the
// directory, another user does, or the owner went away mid-request; the
// system error is its `cause`.
const net = require('node:net');
const path = require('node:path');
const { DurableError, codes } = require('../api/errors');
const { LineReader } = require('./lines');
const { locate } = require('./socket-path');

/** The longest reply line read (a summary listing many alarms is the largest). */
const MAX_REPLY_LINE = 64 * 1024 * 1024;

/** What a failed connect means, in words a user can act on. */
function connectError(dir, address, err) {
  const why = err?.code;
  let message;
  if (why === 'ENOENT' || why === 'ECONNREFUSED' || why === 'ENOTSOCK') {
    message = `no process serves ${dir} (nothing answers at ${address}: the directory is not open, its owner opened it with { control: false }, or is closing)`;
  } else if (why === 'EACCES' || why === 'EPERM') {
    message = `permission denied reaching the process serving ${dir} (${address}): another user owns it; its control socket is for the user it runs as (run this as that user)`;
  } else {
    message = `cannot reach the process serving ${dir} at ${address}: ${err?.message ?? err}`;
  }
  return new DurableError(codes.CONTROL, message, { cause: err });
}

class ControlClient {
  #socket;
  #dir;
  #nextId = 1;
  /** @type {Map<number, { resolve: Function, reject: Function, op: string, timer: NodeJS.Timeout | null }>} */
  #pending = new Map();
  #ended = null;

  /** @internal use connect() */
  constructor(socket, dir, address) {
    this.#socket = socket;
    this.#dir = dir;
    /** Where it connected: the socket's path, or the pipe's name. */
    this.address = address;
    const reader = new LineReader(
      MAX_REPLY_LINE,
      (line) => this.#reply(line),
      () => this.#fail(new DurableError(codes.CONTROL, `the process serving ${dir} sent a reply line over ${MAX_REPLY_LINE} bytes`)),
    );
    socket.on('data', (chunk) => reader.push(chunk));
    const gone = (cause) => new DurableError(codes.CONTROL, `the process serving ${dir} closed the connection (it is closing, or has exited)`, cause ? { cause } : undefined);
    socket.on('error', (err) =>
      this.#fail(
        err.code === 'ECONNRESET' || err.code === 'EPIPE' ? gone(err) : new DurableError(codes.CONTROL, `the connection to the process serving ${dir} failed: ${err.message}`, { cause: err }),
      ),
    );
    socket.on('close', () => this.#fail(gone()));
  }

  /**
   * Sends one request and resolves with its result; rejects with a
   * DurableError carrying the reply's code (ERR_DURABLE_CONTROL for an
   * unknown op or bad params), or ERR_DURABLE_CONTROL if the owner goes away.
   * @param {string} op
   * @param {Record<string, unknown>} [params]
   * @param {{ timeout?: number }} [options] ms to wait for the reply (default 30000; 0 waits forever)
   * @returns {Promise<any>}
   */
  request(op, params = {}, { timeout = 30_000 } = {}) {
    if (this.#ended !== null) return Promise.reject(this.#ended);
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      const timer =
        timeout > 0
          ? setTimeout(() => {
              this.#pending.delete(id);
              reject(new DurableError(codes.CONTROL, `${op}: the process serving ${this.#dir} did not answer within ${timeout} ms`));
            }, timeout)
          : null;
      this.#pending.set(id, { resolve, reject, op, timer });
      this.#socket.write(`${JSON.stringify({ id, op, params })}\n`);
    });
  }

  /** Closes the connection; pending requests reject. */
  close() {
    this.#fail(new DurableError(codes.CONTROL, 'the control connection was closed'));
    this.#socket.destroy();
  }

  #reply(line) {
    let msg;
    try {
      msg = JSON.parse(line);
    } catch {
      return this.#fail(new DurableError(codes.CONTROL, `the process serving ${this.#dir} sent a line that is not JSON`));
    }
    const p = this.#pending.get(msg?.id);
    if (p === undefined) {
      // A refusal not tied to a request (a connection cap, a line it could not read) ends them all.
      if (msg?.ok === false && msg.id === null) this.#fail(new DurableError(msg.code ?? codes.CONTROL, msg.message ?? 'refused'));
      return;
    }
    this.#pending.delete(msg.id);
    if (p.timer !== null) clearTimeout(p.timer);
    if (msg.ok === true) p.resolve(msg.result);
    else p.reject(new DurableError(msg.code ?? codes.CONTROL, `${p.op}: ${msg.message}`));
  }

  #fail(err) {
    this.#ended ??= err;
    for (const p of this.#pending.values()) {
      if (p.timer !== null) clearTimeout(p.timer);
      p.reject(err);
    }
    this.#pending.clear();
  }
}

/**
 * Connects to the process serving the durable directory `dir`.
 * @param {string} dir
 * @param {{ timeout?: number }} [options] ms to wait for the connection (default 5000)
 * @returns {Promise<ControlClient>} rejects with ERR_DURABLE_CONTROL saying why (no owner; another user's)
 */
async function connect(dir, { timeout = 5000 } = {}) {
  const abs = path.resolve(dir);
  let address;
  try {
    address = locate(abs).path;
  } catch (err) {
    throw connectError(abs, path.join(abs, '.control'), err);
  }
  return new Promise((resolve, reject) => {
    const socket = net.connect(address);
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new DurableError(codes.CONTROL, `the process serving ${abs} did not accept a connection within ${timeout} ms (${address})`));
    }, timeout);
    socket.once('error', (err) => {
      clearTimeout(timer);
      reject(connectError(abs, address, err));
    });
    socket.once('connect', () => {
      clearTimeout(timer);
      socket.removeAllListeners('error');
      resolve(new ControlClient(socket, abs, address));
    });
  });
}

module.exports = { connect, ControlClient };
