'use strict';
// WebSocket upgrades for `serve`, and the outgoing `new WebSocket(url)`:
// network sockets (the `ws` package) coupled to in-memory pair ends
// (./websocket.js).
//
// Guarantees:
// * An Upgrade request goes to the Worker's fetch like any other; a 101 with
//   `webSocket` completes the handshake with the 101's headers (its
//   Sec-WebSocket-Protocol chooses the subprotocol), anything else is written
//   as an HTTP response and the connection closed.
// * What the network sends reaches the pair end in order; binary as
//   ArrayBuffer. A clean close passes its code and reason both ways; a lost
//   connection is a close with 1006, not clean (with an error event first
//   when `ws` reported one).
// * Flow control, bounded: while more than HIGH messages from one network
//   socket wait for the object to handle them, that socket is paused (TCP
//   pushes back on the client); it resumes below LOW.

const { WebSocketServer, WebSocket: WsClient } = require('ws');
const { kReceive, kAbort, kState, makePair } = require('./websocket');
const { webSocketOf } = require('./globals');
const { writeResponse, refuseUpgrade } = require('./http');

/** Messages waiting for the object above which the network socket is paused, and below which it resumes. */
const HIGH = 256;
const LOW = 64;

/**
 * Couples the network socket `net` (a `ws` WebSocket, open) to the pair end
 * `end`: `end` is accepted here, and speaks for the network peer.
 * @param {import('ws').WebSocket} net
 * @param {import('./websocket').WebSocket} end
 * @returns {Promise<void>} settles once the network socket has closed and the
 *   pair end's object has handled the close (its webSocketClose or close event)
 */
function couple(net, end) {
  end.accept();
  let backlog = 0;
  let paused = false;
  net.binaryType = 'arraybuffer';
  net.on('message', (data, isBinary) => {
    if (end[kState].closeSent || end.readyState === 3) return;
    const message = isBinary ? toArrayBuffer(data) : Buffer.from(data).toString('utf8');
    backlog++;
    if (!paused && backlog > HIGH) {
      paused = true;
      net.pause();
    }
    // Straight to the peer (its events start in arrival order); the promise
    // settles once the object has handled it, which is what the backlog counts.
    end[kState].peer[kReceive]({ type: 'message', data: message }).finally(() => {
      backlog--;
      if (paused && backlog < LOW) {
        paused = false;
        net.resume();
      }
    });
  });
  let failure;
  net.on('error', (err) => (failure = err));
  let finished;
  const done = new Promise((resolve) => (finished = resolve));
  net.on('close', (code, reasonBuf) => {
    // The close is queued on the end's output chain, which settles once the peer handled it.
    setImmediate(() => finished(end[kState].out.catch(() => {})));
    const reason = reasonBuf.toString('utf8');
    if (end.readyState === 3) return;
    if (code === 1006 || failure !== undefined) {
      end[kState].peer?.[kAbort](1006, reason, failure);
      end[kState].ready = 3;
      return;
    }
    try {
      // 1005: the close frame carried no code.
      if (code === 1005) end.close();
      else end.close(code, reason);
    } catch {
      end[kState].peer?.[kAbort](code, reason);
      end[kState].ready = 3;
    }
  });
  end.addEventListener('message', (ev) => {
    if (net.readyState === WsClient.OPEN) net.send(typeof ev.data === 'string' ? ev.data : Buffer.from(ev.data));
  });
  end.addEventListener('close', (ev) => {
    if (net.readyState === WsClient.OPEN) {
      if (ev.wasClean && ev.code !== 1005 && ev.code !== 1006) net.close(ev.code, ev.reason);
      else if (ev.wasClean) net.close();
      else net.terminate();
    }
  });
  return done;
}

function toArrayBuffer(data) {
  if (data instanceof ArrayBuffer) return data;
  const b = Array.isArray(data) ? Buffer.concat(data) : data;
  return b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength);
}

/**
 * The `upgrade` listener of serve's server: the request goes to `handler`;
 * its answer is completed as a WebSocket, or written as HTTP.
 * @param {(request: Request) => Promise<Response>} handler
 * @param {{ origin: string, log: (line: string) => void, toRequest: Function, sockets: Map<import('ws').WebSocket, Promise<void>> }} o
 *   sockets: the open network sockets, each with couple()'s promise (removed once it settles)
 */
function upgradeListener(handler, o) {
  const wss = new WebSocketServer({ noServer: true, perMessageDeflate: false });
  return async (req, socket, head) => {
    socket.on('error', () => {});
    let response;
    try {
      response = await handler(o.toRequest(req, { origin: o.origin }));
      if (!(response instanceof Response)) throw new TypeError('the fetch handler did not return a Response');
    } catch (err) {
      o.log(`${req.method} ${req.url}: ${err?.stack ?? err}`);
      refuseUpgrade(socket, 500, 'Internal Server Error', 'Internal Server Error\n');
      return;
    }
    const end = webSocketOf(response);
    if (end === null || response.status !== 101) {
      await writeOnSocket(response, socket, req);
      return;
    }
    // The 101's own headers go into the handshake (ws adds the Accept key).
    const extra = [];
    let protocol = null;
    for (const [name, value] of response.headers) {
      const n = name.toLowerCase();
      if (n === 'sec-websocket-protocol') protocol = value;
      else if (!['upgrade', 'connection', 'sec-websocket-accept', 'sec-websocket-extensions', 'content-length', 'transfer-encoding'].includes(n)) extra.push(`${name}: ${value}`);
    }
    const onHeaders = (headers) => {
      headers.push(...extra);
      if (protocol !== null && !headers.some((h) => /^sec-websocket-protocol:/i.test(h))) headers.push(`Sec-WebSocket-Protocol: ${protocol}`);
    };
    wss.once('headers', onHeaders);
    wss.handleUpgrade(req, socket, head, (net) => {
      wss.off('headers', onHeaders);
      const done = couple(net, end);
      o.sockets.set(net, done);
      done.then(() => o.sockets.delete(net));
    });
  };
}

/** Writes a non-101 answer to an upgrade as HTTP/1.1 on the raw socket, then closes it. */
async function writeOnSocket(response, socket, req) {
  const { ServerResponse } = require('node:http');
  const res = new ServerResponse(req);
  res.shouldKeepAlive = false;
  res.assignSocket(socket);
  res.once('finish', () => socket.end());
  try {
    await writeResponse(response, res);
  } catch {
    socket.destroy();
  }
}

/**
 * Makes `ws` (a WebSocket made with `new WebSocket(url)`) an outgoing
 * client: a hidden pair end is coupled to a `ws` client connection.
 * @param {import('./websocket').WebSocket} ws
 * @param {string} url
 * @param {string | string[]} [protocols]
 */
function connectClient(ws, url, protocols) {
  const [hidden, ours] = makePair();
  // `ws` takes the place of `ours`: the hidden end's peer is `ws`.
  const s = ws[kState];
  s.peer = hidden;
  hidden[kState].peer = ws;
  void ours;
  s.url = url;
  s.accepted = true;
  const net = new WsClient(url, protocols);
  net.once('open', () => {
    s.protocol = net.protocol;
    s.ready = 1;
    ws.dispatchEvent(new Event('open'));
    couple(net, hidden);
  });
  net.once('error', (err) => {
    if (s.ready === 0) ws[kAbort](1006, '', err);
  });
}

module.exports = { upgradeListener, couple, connectClient, HIGH, LOW };
