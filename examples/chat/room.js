'use strict';
// A chat room: one durable worker per room name.
//
// The worker never holds a socket itself. `join` hands the connection to the
// host with `this.ctx.acceptWebSocket`, and from then on the host listens on
// it for the room: a message that arrives while the room is not in memory
// (evicted, because thousands of quiet rooms need not be) materializes it and
// runs `webSocketMessage`. Nothing on the instance outlives an eviction, so
// everything the room needs about a connection is in its tags and attachment,
// and everything it needs about the conversation is in `this.state`.
//
// What a client receives (JSON text frames):
//   { type: 'history', room, messages: Message[] }   once, on joining
//   { type: 'message', seq, from, text, at }        every message said in the room
//   { type: 'joined' | 'left', name, present }      someone came or went
//   { type: 'error', error }                        what it sent was refused
// What a client sends: the text of a message, as a text frame. The text 'ping'
// is answered 'pong' by the host, without waking the room (a keep-alive).
const { DurableWorker } = require('durable-workers');

/** Messages kept per room; older ones are dropped as new ones arrive. */
const HISTORY = 100;
/** Longest message, in characters. HISTORY of them stay well under a worker's 1 MiB. */
const MAX_TEXT = 1000;

/**
 * Each message is its own key, `msg:<seq>` zero-padded so keys sort in order:
 * saying something writes one small value and deletes the one that fell off
 * the end, instead of rewriting the whole history.
 */
const msgKey = (/** @type {number} */ seq) => `msg:${String(seq).padStart(12, '0')}`;

/**
 * @typedef {import('durable-workers').DurableWebSocket} DurableWebSocket
 * @typedef {{ name: string, joinedAt: number }} Attachment what join() keeps with each socket
 * @typedef {{ seq: number, from: string, text: string, at: number }} Message
 */

/**
 * The attachment join() gave `ws`. Every socket of a room was accepted by
 * join(), so there is one; it is read back from the host, not from `this`.
 * @param {DurableWebSocket} ws
 * @returns {Attachment}
 */
const attachment = (ws) => /** @type {Attachment} */ (ws.deserializeAttachment());

class Room extends DurableWorker {
  /**
   * Takes over a client's connection for `name`: tags it with the name, sends
   * it the history, and tells everyone who is here.
   * @param {DurableWebSocket} ws the client's socket, as the handle the host gives the worker
   *   (a caller passes the raw `ws` socket; it crosses the stub as a handle)
   * @param {string} name
   */
  join(ws, name) {
    this.ctx.acceptWebSocket(ws, [`name:${name}`]);
    // The attachment survives eviction; a field on `this` would not.
    ws.serializeAttachment({ name, joinedAt: Date.now() });
    // Idempotent, and held by the host: pings from clients never wake the room.
    this.ctx.setWebSocketAutoResponse({ request: 'ping', response: 'pong' });
    const messages = [...this.state.list({ prefix: 'msg:' }).values()];
    ws.send(JSON.stringify({ type: 'history', room: this.id, messages }));
    this.#broadcast({ type: 'joined', name, present: this.#present() });
  }

  /**
   * Someone said something: keep it, then tell everyone (the sender included).
   * @param {DurableWebSocket} ws
   * @param {string | Buffer} data
   */
  webSocketMessage(ws, data) {
    if (typeof data !== 'string') {
      send(ws, { type: 'error', error: 'send text frames, not binary' });
      return;
    }
    const text = data.trim();
    if (text === '') return;
    if (text.length > MAX_TEXT) {
      send(ws, { type: 'error', error: `a message is at most ${MAX_TEXT} characters` });
      return;
    }

    const { name } = attachment(ws);
    /** @type {number} */
    const last = this.state.get('seq') ?? 0;
    const seq = last + 1;
    /** @type {Message} */
    const message = { seq, from: name, text, at: Date.now() };
    this.state.set('seq', seq);
    this.state.set(msgKey(seq), message);
    if (seq > HISTORY) this.state.delete(msgKey(seq - HISTORY));
    // Not awaited, and no need: each send waits until the writes above are
    // committed, so nobody ever reads a message a crash could take back.
    this.#broadcast({ type: 'message', ...message });
  }

  /**
   * Someone left (closed the tab, lost the connection): tell the others.
   * @param {DurableWebSocket} ws
   */
  webSocketClose(ws) {
    const { name } = attachment(ws) ?? {};
    this.#broadcast({ type: 'left', name, present: this.#present() });
  }

  /**
   * @param {DurableWebSocket} ws
   * @param {any} err
   */
  webSocketError(ws, err) {
    // The host closes a socket after an error; its webSocketClose says goodbye.
    console.warn(`room ${this.id}: socket of ${attachment(ws)?.name ?? 'someone'} failed: ${err?.message ?? err}`);
  }

  /** Who is here, one name per open connection, sorted. */
  #present() {
    return this.ctx
      .getWebSockets()
      .filter((ws) => ws.readyState === 1)
      .map((ws) => attachment(ws)?.name)
      .sort();
  }

  /** @param {object} event sent to every open socket as JSON */
  #broadcast(event) {
    const frame = JSON.stringify(event);
    for (const ws of this.ctx.getWebSockets()) if (ws.readyState === 1) ws.send(frame);
  }
}

/**
 * @param {DurableWebSocket} ws
 * @param {object} event
 */
function send(ws, event) {
  ws.send(JSON.stringify(event));
}

module.exports = { Room, HISTORY, MAX_TEXT };
