'use strict';
// The objects of one host whose files are open, most recently used last.
//
// Guarantee: past `max`, the least recently used idle objects have their
// connections closed ("parked"), so a host with any number of live objects
// keeps at most about `max` files open (each costs descriptors, and SQLite's
// memory per connection). A parked object stays live (its instance, its
// sockets, its state in memory) and its file opens again, off the JS thread,
// before its next event. Nothing about storage changes: a connection is
// parked only with no transaction open and no commit waiting to be synced,
// and the settings user SQL changed on it go to the next one.
//
// An object only read so far (no file yet) is parked too: its empty
// stand-in is dropped and made again when used. Not counted: an object whose
// storage is used outside any event (a timer in the app) after it was
// parked: that use opens the file again on the spot.

class OpenFiles {
  #max;
  /** @type {Map<object, true>} actors with open files, least recently used first */
  #open = new Map();

  /** @param {number} max files kept open before idle ones are parked */
  constructor(max) {
    this.#max = max;
  }

  /**
   * Before an event of `actor`: marks it most recently used. Null when its
   * connection is open; else a promise that opens it again (then parks the
   * least recently used idle ones beyond `max`).
   * @param {{ native: object, idle(): boolean }} actor
   * @returns {Promise<void> | null}
   */
  use(actor) {
    if (this.#open.delete(actor)) {
      this.#open.set(actor, true);
      return null;
    }
    return this.#load(actor);
  }

  async #load(actor) {
    if (actor.native.parked()) await actor.native.load();
    this.#open.set(actor, true);
    this.#trim();
  }

  /** Parks idle objects, least recently used first, until at most `max` are open. */
  #trim() {
    for (const actor of this.#open.keys()) {
      if (this.#open.size <= this.#max) return;
      if (actor.idle() && actor.native.park()) this.#open.delete(actor);
    }
  }

  /** The actor closed (or broke): no longer counted. */
  forget(actor) {
    this.#open.delete(actor);
  }
}

module.exports = { OpenFiles };
