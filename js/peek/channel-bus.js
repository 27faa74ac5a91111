'use strict';
// The in-process channel: what openChannel gives when no URL is configured.
// Same interface as the WebSocket one, so a supervisor and its tests do not
// care which they hold; a message published here is delivered, on a later
// turn, to every channel of this bus subscribed to its topic (the publisher's
// own included, as a hub would).
const { matches } = require('./topics');
const { codes, peekError } = require('./errors');

class Bus {
  /** @type {Set<{ topics: Set<string>, onMessage: Function }>} */
  #subs = new Set();

  /**
   * @param {string[]} topics
   * @param {(m: { topic: string, message: unknown }) => void} onMessage
   * @returns {import('../../peek').Channel}
   */
  open(topics, onMessage) {
    const sub = { topics: new Set(topics), onMessage };
    this.#subs.add(sub);
    let closed = false;
    return {
      kind: 'in-process',
      publish: async (topic, message) => {
        if (closed) throw peekError(codes.CHANNEL, `publish to ${topic}: the channel is closed`);
        this.publish(topic, message);
      },
      close: async () => {
        closed = true;
        this.#subs.delete(sub);
      },
    };
  }

  /** Delivers to every matching subscriber on a later turn, each its own copy. */
  publish(topic, message) {
    for (const sub of this.#subs) {
      if (!matches(sub.topics, topic)) continue;
      const copy = structuredClone(message);
      setImmediate(() => {
        if (this.#subs.has(sub)) sub.onMessage({ topic, message: copy });
      });
    }
  }

  close() {
    this.#subs.clear();
  }
}

module.exports = { Bus };
