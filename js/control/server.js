'use strict';
// The control socket's server: the process serving a durable directory
// answers read-only questions about it (operations.js) to `durable-workers
// inspect` and `top`, and to anything else that speaks the protocol.
//
// The guarantee: a client can never crash the host, stop its event loop, or
// make it hold more than about a megabyte per connection; the socket never
// keeps the process alive; and it is gone before the directory is released,
// so it never outlives the lock that made it safe to create.
//
// The protocol, one JSON object a line each way (newline-delimited JSON):
//   request  {"id": 1, "op": "stats", "params": {}}
//   reply    {"id": 1, "ok": true, "result": …}
//        or  {"id": 1, "ok": false, "code": "ERR_DURABLE_CONTROL", "message": "…"}
// Requests on one connection are answered in order, one at a time. An error
// in an operation (an unknown op, bad params) is a reply; a line that is not
// a JSON object with a string `op`, or longer than MAX_REQUEST_LINE, gets a
// reply with `"id": null` (or its id when it had one) and the connection is
// closed: a peer that sends garbage is not one to keep reading.
//
// The mechanism: a socket at the path socket-path.js chooses. A socket file
// found there is a killed owner's (open() holds the directory's lock, so no
// live process serves it) and is replaced. Listening can fail for reasons a
// user cannot fix from inside the program (a file system without sockets and
// no private runtime directory, a foreign file in the way); open() then goes
// on without one and says so in a process warning, DURABLE_CONTROL_UNAVAILABLE.
const fs = require('node:fs');
const net = require('node:net');
const path = require('node:path');
const { isMainThread } = require('node:worker_threads');
const { codes } = require('../api/errors');
const { LineReader, MAX_REQUEST_LINE } = require('./lines');
const { dispatch } = require('./operations');
const where = require('./socket-path');

/** The warning's code when open() goes on without a control socket. */
const UNAVAILABLE = 'DURABLE_CONTROL_UNAVAILABLE';
/** Connections at once; one more is told so and closed. */
const MAX_CONNECTIONS = 64;
/** Lines queued on one connection before it is no longer read (it is again once they are answered). */
const QUEUE_HIGH = 32;
/** How long a connection being closed for a bad line may take to read its last reply. */
const LINGER_MS = 1000;

/**
 * Errors binding in the directory that mean its file system cannot hold a
 * socket (powercut's FUSE refuses mknod with EPERM; some mounts say
 * EOPNOTSUPP): the private runtime directory is used instead.
 */
const NO_SOCKETS_HERE = new Set(['EPERM', 'EOPNOTSUPP', 'ENOTSUP', 'ENOSYS', 'EINVAL']);

/** Files to remove should the process exit without close() (a SIGKILL leaves them; the next owner replaces them). */
const leftovers = new Set();
let exitHooked = false;

function removeLeftovers() {
  for (const f of leftovers) {
    try {
      fs.unlinkSync(f);
    } catch {}
  }
}

/**
 * Starts the control socket for `host`, whose directory this process has
 * just locked (open() succeeded). Never rejects: a socket that cannot be
 * made is a warning, and null. Only the main thread serves one.
 * @param {import('../api/host').Host} host
 * @param {string} dir the directory as given to open()
 * @returns {Promise<ControlServer | null>}
 */
async function startControl(host, dir) {
  if (!isMainThread) return null;
  const abs = path.resolve(dir);
  try {
    return await listenFor(host, abs);
  } catch (err) {
    process.emitWarning(`${abs} has no control socket, so \`durable-workers inspect\` and \`top\` cannot reach this process (it serves the directory all the same): ${err?.message ?? err}`, {
      type: 'DurableWorkersWarning',
      code: UNAVAILABLE,
    });
    return null;
  }
}

async function listenFor(host, abs) {
  if (process.platform === 'win32') return ControlServer.listen(host, where.pipeName(abs), []);
  const inDir = where.inDirPath(abs);
  const pointer = where.pointerPath(abs);
  removeStale(inDir);
  if (where.fits(inDir)) {
    try {
      const server = await ControlServer.listen(host, inDir, [inDir]);
      removeIfThere(pointer); // a pointer left by an owner when the directory had a longer path
      return server;
    } catch (err) {
      if (!NO_SOCKETS_HERE.has(err?.code)) throw err;
    }
  }
  const fallback = where.fallbackPath(abs);
  if (!where.fits(fallback)) {
    throw new Error(`neither ${inDir} nor ${fallback} fits in a socket address (${where.maxSocketPath()} bytes): set XDG_RUNTIME_DIR to a shorter directory`);
  }
  removeStale(fallback); // the same hash: this directory's, from a killed owner
  const server = await ControlServer.listen(host, fallback, [fallback, pointer]);
  try {
    writePointer(pointer, fallback);
  } catch (err) {
    await server.close();
    throw err;
  }
  return server;
}

/** Removes a socket file at `p` (a killed owner's); anything else there is refused, never removed. */
function removeStale(p) {
  let st;
  try {
    st = fs.lstatSync(p);
  } catch (err) {
    if (err.code === 'ENOENT') return;
    throw err;
  }
  if (!st.isSocket()) throw new Error(`${p} exists and is not a socket: move it away so the control socket can be made there`);
  fs.unlinkSync(p);
}

function removeIfThere(p) {
  try {
    fs.unlinkSync(p);
  } catch (err) {
    if (err.code !== 'ENOENT') throw err;
  }
}

/** fsync of a directory, so the entries removed from it stay removed; best effort. */
function syncDir(dir) {
  let fd;
  try {
    fd = fs.openSync(dir, 'r');
    fs.fsyncSync(fd);
  } catch {
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

/**
 * Writes `<dir>/.control` (0600) atomically, synced: a client reads the whole
 * path or none, and a power cut never leaves part of one.
 */
function writePointer(pointer, target) {
  const tmp = `${pointer}.${process.pid}.tmp`;
  const fd = fs.openSync(tmp, 'w', 0o600);
  try {
    fs.writeSync(fd, `${target}\n`);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(tmp, pointer);
}

class ControlServer {
  #host;
  #server;
  #address;
  /** @type {string[]} files this server made, removed by close() */
  #files;
  /** @type {Set<net.Socket>} */
  #connections = new Set();
  #closing = null;

  constructor(host, server, address, files) {
    this.#host = host;
    this.#server = server;
    this.#address = address;
    this.#files = files;
  }

  /**
   * Listens at `address` (a socket path, or a pipe on Windows), the socket
   * made 0600 before this resolves.
   * @param {string[]} files what close() removes
   * @returns {Promise<ControlServer>}
   */
  static listen(host, address, files) {
    return new Promise((resolve, reject) => {
      const server = net.createServer();
      const control = new ControlServer(host, server, address, files);
      server.on('connection', (socket) => control.#serve(socket));
      server.once('error', reject);
      server.listen(address, () => {
        server.off('error', reject);
        server.on('error', () => {}); // after listening, an accept error only loses that client
        server.unref();
        try {
          if (process.platform !== 'win32') fs.chmodSync(address, 0o600);
        } catch (err) {
          server.close();
          reject(err);
          return;
        }
        for (const f of files) leftovers.add(f);
        if (!exitHooked) {
          exitHooked = true;
          process.on('exit', removeLeftovers);
        }
        resolve(control);
      });
    });
  }

  /** Where clients connect: the socket's path, or the pipe's name. */
  get address() {
    return this.#address;
  }

  /**
   * Stops listening, ends every connection and removes the socket (and the
   * pointer), the removal synced: all before this returns, so before the caller releases the
   * directory's lock. Connections are ended, not reset, so a client hears
   * the owner closed; one that does not let go is dropped after LINGER_MS.
   * Nothing here waits on a client.
   * @returns {Promise<void>}
   */
  close() {
    if (this.#closing === null) {
      this.#server.close();
      for (const s of this.#connections) {
        s.end();
        setTimeout(() => s.destroy(), LINGER_MS).unref();
      }
      for (const f of this.#files) {
        try {
          fs.unlinkSync(f);
        } catch {}
        leftovers.delete(f);
      }
      // The removals are synced, like the rest of a clean close: a power cut
      // after it must not bring back a socket or pointer nobody serves.
      for (const d of new Set(this.#files.map((f) => path.dirname(f)))) syncDir(d);
      this.#closing = Promise.resolve();
    }
    return this.#closing;
  }

  /** One connection: lines in, answered in order, one at a time. */
  #serve(socket) {
    socket.unref();
    socket.on('error', () => {}); // a client that went away
    if (this.#connections.size >= MAX_CONNECTIONS) {
      socket.end(encode(refusal(null, `too many control connections (${MAX_CONNECTIONS}); close one and retry`)));
      setTimeout(() => socket.destroy(), LINGER_MS).unref();
      return;
    }
    this.#connections.add(socket);
    socket.on('close', () => this.#connections.delete(socket));
    const queue = [];
    let busy = false;
    let ended = false;
    const hangUp = (reply) => {
      ended = true;
      queue.length = 0;
      socket.pause();
      socket.end(encode(reply));
      setTimeout(() => socket.destroy(), LINGER_MS).unref();
    };
    const pump = async () => {
      if (busy) return;
      busy = true;
      while (queue.length > 0 && !ended && !socket.destroyed) {
        const { reply, fatal } = await this.#answer(queue.shift());
        if (ended || socket.destroyed) break;
        if (fatal) {
          hangUp(reply);
          break;
        }
        if (!socket.write(typeof reply === 'string' ? reply : encode(reply))) await drained(socket);
        if (queue.length < QUEUE_HIGH / 2 && socket.isPaused() && !ended) socket.resume();
      }
      busy = false;
    };
    const reader = new LineReader(
      MAX_REQUEST_LINE,
      (text) => {
        if (ended || text.trim() === '') return;
        queue.push(text);
        if (queue.length >= QUEUE_HIGH) socket.pause();
        pump();
      },
      (length) => hangUp(refusal(null, `a request line of more than ${MAX_REQUEST_LINE} bytes (${length} so far, no newline): the connection is closed`)),
    );
    socket.on('data', (chunk) => {
      if (!ended) reader.push(chunk);
    });
  }

  /**
   * The reply to one line: an encoded line, or an object to encode;
   * `fatal` when the line was not a request at all.
   */
  async #answer(text) {
    let req;
    try {
      req = JSON.parse(text);
    } catch (err) {
      return { fatal: true, reply: refusal(null, `malformed request, not JSON (${err.message}): send one JSON object a line, such as {"id":1,"op":"stats"}`) };
    }
    if (req === null || typeof req !== 'object' || Array.isArray(req) || typeof req.op !== 'string') {
      return { fatal: true, reply: refusal(idOf(req), 'malformed request: a line must be a JSON object with a string "op", such as {"id":1,"op":"stats"}') };
    }
    const id = idOf(req);
    const { params = {} } = req;
    if (params === null || typeof params !== 'object' || Array.isArray(params)) return { fatal: false, reply: refusal(id, `${req.op}: params must be an object`) };
    let result;
    try {
      result = await dispatch(this.#host, req.op, params);
    } catch (err) {
      const code = typeof err?.code === 'string' && err.code.startsWith('ERR_') ? err.code : codes.INTERNAL;
      return { fatal: false, reply: { id, ok: false, code, message: String(err?.message ?? err) } };
    }
    try {
      return { fatal: false, reply: `${JSON.stringify({ id, ok: true, result: result ?? null })}\n` };
    } catch (err) {
      return { fatal: false, reply: { id, ok: false, code: codes.INTERNAL, message: `${req.op}: its result cannot be sent as JSON (${err.message})` } };
    }
  }
}

/** A request's id, echoed in its reply: a number or a short string, else null. */
function idOf(req) {
  const id = req?.id;
  if (typeof id === 'number' && Number.isFinite(id)) return id;
  if (typeof id === 'string' && id.length <= 256) return id;
  return null;
}

function refusal(id, message) {
  return { id, ok: false, code: codes.CONTROL, message };
}

function encode(reply) {
  return `${JSON.stringify(reply)}\n`;
}

/** Resolves when `socket` can take more, or has closed. */
function drained(socket) {
  return new Promise((resolve) => {
    const done = () => {
      socket.off('drain', done);
      socket.off('close', done);
      resolve();
    };
    socket.on('drain', done);
    socket.on('close', done);
  });
}

module.exports = { startControl, ControlServer, UNAVAILABLE };
