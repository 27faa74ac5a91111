'use strict';
// The WebSocket channel: one connection per adapter to a pubsub hub, shared
// by every channel the adapter opens, reconnecting with backoff. The wire
// protocol is JSON text frames:
//   out: {"type":"subscribe","topics":[...]}  {"type":"unsubscribe","topics":[...]}
//        {"type":"publish","topic":"...","message":...}
//   in:  {"type":"message","topic":"...","message":...}
// After every (re)connect the whole subscription set is sent again, so a hub
// that forgot us on a restart hears it. Publishes made while disconnected
// wait (a bounded queue) and go out in order once connected.
const { matches } = require('./topics');
const { codes, peekError } = require('./errors');

const MAX_QUEUED = 1000;

class WsHub {
  #url;
  #WebSocket;
  #minDelayMs;
  #maxDelayMs;
  #log;
  /** @type {Set<{ topics: Set<string>, onMessage: Function }>} */
  #subs = new Set();
  #ws = null;
  #headers;
  #beforeConnect;
  #attempt = 0;
  #timer = null;
  #queue = [];
  #closed = false;
  /** Connections made so far (tests and logs read it). */
  connects = 0;

  /**
   * @param {string} url ws:// or wss://
   * @param {{ minDelayMs?: number, maxDelayMs?: number, log?: (r: object) => void, headers?: Record<string, string>, beforeConnect?: () => void }} [options]
   *   headers: sent with every connection's upgrade request (an authorization, kept out of the URL and so out of access logs)
   *   beforeConnect: runs before each connection, and may refuse it by throwing (node/port-holder.js)
   */
  constructor(url, { minDelayMs = 100, maxDelayMs = 30_000, log = () => {}, headers, beforeConnect = () => {} } = {}) {
    this.#beforeConnect = beforeConnect;
    this.#url = url;
    this.#headers = headers;
    // Loaded only when a URL is configured: the in-process bus needs no ws.
    this.#WebSocket = require('ws');
    this.#minDelayMs = minDelayMs;
    this.#maxDelayMs = maxDelayMs;
    this.#log = log;
    this.#connect();
  }

  open(topics, onMessage) {
    if (this.#closed) throw peekError(codes.CHANNEL, 'the channel hub is closed');
    const sub = { topics: new Set(topics), onMessage };
    this.#subs.add(sub);
    if (topics.length > 0) this.#sendNow({ type: 'subscribe', topics });
    let closed = false;
    return {
      kind: 'websocket',
      publish: (topic, message) => {
        if (closed) return Promise.reject(peekError(codes.CHANNEL, `publish to ${topic}: the channel is closed`));
        return this.#publish(topic, message);
      },
      close: async () => {
        if (closed) return;
        closed = true;
        this.#subs.delete(sub);
        const still = new Set([...this.#subs].flatMap((s) => [...s.topics]));
        const gone = topics.filter((t) => !still.has(t));
        if (gone.length > 0) this.#sendNow({ type: 'unsubscribe', topics: gone });
      },
    };
  }

  /** Closes the connection for good; queued publishes are refused. */
  async close() {
    this.#closed = true;
    clearTimeout(this.#timer);
    for (const q of this.#queue) q.reject(peekError(codes.CHANNEL, `publish to ${q.topic}: the channel closed before it was connected`));
    this.#queue = [];
    const ws = this.#ws;
    this.#ws = null;
    if (ws && ws.readyState !== ws.CLOSED) {
      await new Promise((resolve) => {
        ws.once('close', resolve);
        ws.close(1000);
        setTimeout(() => ws.terminate(), 1000).unref();
      });
    }
  }

  #connect() {
    if (this.#closed) return;
    try {
      this.#beforeConnect();
    } catch (err) {
      this.#log({ level: 'error', worker: '(channel)', args: [`channel ${this.#url}: not connecting: ${err.message}`] });
      this.#retry();
      return;
    }
    const ws = new this.#WebSocket(this.#url, this.#headers ? { headers: this.#headers } : undefined);
    this.#ws = ws;
    ws.on('open', () => {
      this.#attempt = 0;
      this.connects++;
      const topics = [...new Set([...this.#subs].flatMap((s) => [...s.topics]))];
      if (topics.length > 0) ws.send(JSON.stringify({ type: 'subscribe', topics }));
      const queued = this.#queue;
      this.#queue = [];
      for (const q of queued) this.#send(ws, q);
    });
    ws.on('message', (data) => this.#deliver(data));
    ws.on('error', (err) => this.#log({ level: 'warn', worker: '(channel)', args: ['channel error:', err.message] }));
    ws.on('close', () => {
      if (this.#ws !== ws || this.#closed) return;
      this.#ws = null;
      this.#retry();
    });
  }

  /** Connects again later: backoff with jitter, so a hub that restarts is not met by every client at once. */
  #retry() {
    const delay = Math.min(this.#maxDelayMs, this.#minDelayMs * 2 ** this.#attempt++) * (0.5 + Math.random() / 2);
    this.#timer = setTimeout(() => this.#connect(), delay);
  }

  #deliver(data) {
    let m;
    try {
      m = JSON.parse(String(data));
    } catch {
      this.#log({ level: 'warn', worker: '(channel)', args: ['a frame that is not JSON was dropped'] });
      return;
    }
    if (m?.type !== 'message' || typeof m.topic !== 'string') return;
    for (const sub of this.#subs) if (matches(sub.topics, m.topic)) sub.onMessage({ topic: m.topic, message: m.message });
  }

  #publish(topic, message) {
    return new Promise((resolve, reject) => {
      const q = { topic, frame: JSON.stringify({ type: 'publish', topic, message }), resolve, reject };
      const ws = this.#ws;
      if (ws && ws.readyState === ws.OPEN) this.#send(ws, q);
      else if (this.#queue.length >= MAX_QUEUED) reject(peekError(codes.CHANNEL, `publish to ${topic}: not connected to ${this.#url} and ${MAX_QUEUED} messages are already waiting`));
      else this.#queue.push(q);
    });
  }

  #send(ws, q) {
    ws.send(q.frame, (err) => (err ? q.reject(peekError(codes.CHANNEL, `publish to ${q.topic}: ${err.message}`, { cause: err })) : q.resolve()));
  }

  #sendNow(frame) {
    const ws = this.#ws;
    // Not connected: the subscription set is sent in full on connect.
    if (ws && ws.readyState === ws.OPEN) ws.send(JSON.stringify(frame));
  }
}

module.exports = { WsHub };
