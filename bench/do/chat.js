'use strict';
// The chat rooms bench/do.js drives: `rooms` rooms of `perRoom` members, each
// member a `ws` client (no permessage-deflate, which the Node host does not
// offer: both hosts send frames as they are) on GET /room/<name> of the
// fixture's ChatRoom, which stores each message and sends it to the room's
// other members.
//
// The load is a closed loop per member, one message in flight each: a
// member sends its next message once its previous one has reached every
// other member of its room, so there are rooms × perRoom messages in flight,
// as many as the other scenarios' requests. A message is "delivered" then;
// each is perRoom - 1 deliveries (frames received).
//
// Every frame received is checked: it comes from another member of the same
// room (never the receiver itself, never another room's), and from each
// sender in the order sent, with none missing or repeated. A message not
// delivered to all within TIMEOUT_MS is an error.
const WS = require('ws');

/** A message not delivered to every other member within this is lost. */
const TIMEOUT_MS = 10_000;
/** A chat line's text after its "<sender> <seq> " header: about the size of a short chat message. */
const TEXT = 'a short chat message, about as long as most are';

/**
 * @param {string} url the host's base URL
 * @param {{ rooms: number, perRoom: number, prefix: string }} o prefix: of the room names (fresh rooms per session)
 */
function chatRooms(url, { rooms, perRoom, prefix }) {
  const base = url.replace(/^http/, 'ws');
  const width = rooms * perRoom;
  const members = [];
  /** Every member opened or opening, for close(): a failed connect() leaves some not in `members`. */
  const all = [];
  /** The first 10 errors seen, and how many there were. */
  const errors = [];
  let errorCount = 0;
  let frames = 0;

  const fail = (message) => {
    if (++errorCount <= 10) errors.push(message);
  };

  /** Opens every member's socket, room after room, members of a room at once. */
  async function connect() {
    for (let r = 0; r < rooms; r++) {
      const opened = Array.from({ length: perRoom }, (_, k) => open(r * perRoom + k, r));
      members.push(...(await Promise.all(opened)));
    }
  }

  function open(id, room) {
    return new Promise((resolve, reject) => {
      const ws = new WS(`${base}/room/${prefix}${room}`, { perMessageDeflate: false });
      // Per sender of the room: the seq expected next from it.
      const m = { id, room, ws, seq: 0, expected: new Map(), waiting: null, closed: false };
      all.push(m);
      for (let k = 0; k < perRoom; k++) if (room * perRoom + k !== id) m.expected.set(room * perRoom + k, 1);
      ws.on('message', (data) => receive(m, String(data)));
      ws.on('unexpected-response', (req, res) => reject(new Error(`GET /room/${prefix}${room}: HTTP ${res.statusCode} instead of an upgrade`)));
      ws.on('error', (err) => {
        fail(`member ${id}: ${err.message}`);
        reject(err);
      });
      ws.on('close', (code) => {
        if (!m.closed) fail(`member ${id}: closed by the host (${code})`);
        m.closed = true;
      });
      ws.on('open', () => resolve(m));
    });
  }

  function receive(m, text) {
    frames++;
    const [sender, seq] = text.split(' ', 2).map(Number);
    const expected = m.expected.get(sender);
    if (expected === undefined) return fail(`member ${m.id} (room ${m.room}) received ${sender === m.id ? 'its own message' : `a message of member ${sender}, not of its room`}: ${text.slice(0, 40)}`);
    if (seq !== expected) return fail(`member ${m.id} received message ${seq} of member ${sender}, expected ${expected} (lost, repeated or out of order)`);
    m.expected.set(sender, expected + 1);
    const from = members[sender];
    const w = from?.waiting;
    if (w && w.seq === seq && --w.left === 0) {
      from.waiting = null;
      clearTimeout(w.timer);
      w.resolve();
    }
  }

  /** Member i sends its next message; resolves once every other member of its room has it. */
  function op(i) {
    const m = members[i];
    if (m.closed) return Promise.reject(new Error(`member ${i}: its socket is closed`));
    const seq = ++m.seq;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        m.waiting = null;
        reject(new Error(`member ${i}'s message ${seq}: not delivered to every other member of room ${m.room} within ${TIMEOUT_MS} ms${errors.length ? ` (${errors[0]})` : ''}`));
      }, TIMEOUT_MS);
      m.waiting = { seq, left: perRoom - 1, resolve, timer };
      m.ws.send(`${i} ${seq} ${TEXT}`);
    });
  }

  /** The first errors seen, thrown if any: a scenario fails on a wrong frame even if every wait was met. */
  function check() {
    if (errorCount > 0) throw new Error(`chat: ${errorCount} error(s)${errorCount > errors.length ? `, the first ${errors.length}` : ''}: ${errors.join('; ')}`);
  }

  /** Closes every socket (close handshake, then terminate whatever lingers). */
  async function close() {
    await Promise.all(
      all.map(
        (m) =>
          new Promise((resolve) => {
            m.closed = true;
            if (m.ws.readyState === WS.CLOSED) return resolve();
            const t = setTimeout(() => {
              m.ws.terminate();
              resolve();
            }, 2000);
            m.ws.once('close', () => {
              clearTimeout(t);
              resolve();
            });
            m.ws.close(1000, 'done');
          }),
      ),
    );
  }

  return { width, connect, op, check, close, frames: () => frames };
}

module.exports = { chatRooms };
