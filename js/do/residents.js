'use strict';
// Which Durable Objects of one host are in memory, least recently used
// first, and their eviction.
//
// Guarantee, as on Cloudflare: an idle object may leave memory at any time
// between its events; its next event constructs a new instance from its
// file. What an object stores is never touched by eviction; what it holds in
// fields is gone. An object leaves only when it is idle (no event running or
// waiting, nothing open on its storage, no output waiting, no `waitUntil`
// work, no socket accepted with `accept()`): an object that holds only
// hibernatable sockets leaves them open, and their next event wakes it
// (./hibernation.js).
//
// When: once idle for `evictAfterMs` (`hibernateAfterMs` for an object whose
// only connections are hibernatable sockets, as workerd hibernates those
// sooner), or, past `maxLive` objects in memory, the least recently used
// idle ones first. No timers: the check runs as an event starts, looking at
// the least recently used end only, so a host with no events evicts nothing
// (and needs no timer to keep it alive).

/** Objects the check looks at per event: bounds its work, whatever the number of objects. */
const LOOK = 8;

class Residents {
  /** @type {Map<object, number>} actors in memory → when their last event started or ended (ms), least recently used first */
  #used = new Map();
  #maxLive;
  #evictAfterMs;
  #hibernateAfterMs;
  #now;

  /**
   * @param {{ maxLive: number, evictAfterMs: number, hibernateAfterMs: number, now?: () => number }} o
   *   now: a monotonic clock in ms (a step of the wall clock must not evict every object)
   */
  constructor({ maxLive, evictAfterMs, hibernateAfterMs, now = () => performance.now() }) {
    this.#maxLive = maxLive;
    this.#evictAfterMs = evictAfterMs;
    this.#hibernateAfterMs = hibernateAfterMs;
    this.#now = now;
  }

  /** How many objects are in memory. */
  get size() {
    return this.#used.size;
  }

  /**
   * An event of `actor` starts: it is the most recently used, and the least
   * recently used may leave.
   * @param {{ evictable(): boolean, hibernating(): boolean, evict(): void }} actor
   */
  touch(actor) {
    const now = this.#now();
    this.#used.delete(actor);
    this.#used.set(actor, now);
    this.#sweep(now);
  }

  /**
   * An event of `actor` ended: its idle time counts from now, not from when
   * the event started. Only an actor still resident is moved.
   * @param {object} actor
   */
  rest(actor) {
    if (!this.#used.has(actor)) return;
    this.#used.delete(actor);
    this.#used.set(actor, this.#now());
  }

  /** `actor` left memory another way (closed, broken). */
  forget(actor) {
    this.#used.delete(actor);
  }

  #sweep(now) {
    const shortest = Math.min(this.#evictAfterMs, this.#hibernateAfterMs);
    let looked = 0;
    for (const [actor, at] of this.#used) {
      if (looked++ >= LOOK) return;
      const crowded = this.#used.size > this.#maxLive;
      // The rest were used later: none has waited longer.
      if (!crowded && now - at < shortest) return;
      const limit = actor.hibernating() ? this.#hibernateAfterMs : this.#evictAfterMs;
      if (!crowded && now - at < limit) continue;
      this.#used.delete(actor);
      if (actor.evictable()) actor.evict();
      // Busy: looked at again after another wait, not at every event.
      else this.#used.set(actor, now);
    }
  }
}

module.exports = { Residents };
