'use strict';
// A full-screen view on a terminal, as top(1) draws one: the alternate
// screen, the cursor hidden, each frame drawn over the last; keys read raw
// (q or Ctrl-C quits); a resize redraws. Whatever ends the program (q,
// SIGINT, SIGTERM, an exception, process.exit) puts the terminal back as it
// was: the main screen, the cursor, cooked input.

const ENTER = '\x1b[?1049h\x1b[?25l'; // alternate screen, cursor hidden
const LEAVE = '\x1b[?25h\x1b[?1049l'; // cursor shown, main screen back
const QUIT_KEYS = new Set(['q', 'Q', '\x03', '\x04']); // q, Ctrl-C, Ctrl-D (raw mode delivers them as bytes)
const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'];

class Screen {
  #out;
  #in;
  #onQuit;
  #onResize;
  #active = false;
  #listeners = [];

  /**
   * @param {NodeJS.WriteStream} out a terminal
   * @param {NodeJS.ReadStream} input its keyboard (read raw while the screen is up, if it is a terminal)
   * @param {{ onQuit: () => void, onResize: () => void }} handlers
   */
  constructor(out, input, { onQuit, onResize }) {
    this.#out = out;
    this.#in = input;
    this.#onQuit = onQuit;
    this.#onResize = onResize;
  }

  /** The terminal's size, with the usual 80×24 when it does not say. */
  get size() {
    return { columns: this.#out.columns || 80, rows: this.#out.rows || 24 };
  }

  /** Takes over the terminal. */
  enter() {
    if (this.#active) return;
    this.#active = true;
    this.#out.write(ENTER);
    const on = (emitter, event, fn) => {
      emitter.on(event, fn);
      this.#listeners.push(() => emitter.off(event, fn));
    };
    if (this.#in?.isTTY) {
      this.#in.setRawMode(true);
      this.#in.resume();
      on(this.#in, 'data', (chunk) => {
        for (const ch of String(chunk)) if (QUIT_KEYS.has(ch)) return this.#onQuit();
      });
    }
    on(this.#out, 'resize', () => this.#onResize());
    for (const sig of SIGNALS) on(process, sig, () => this.#onQuit());
    // Last resort, synchronous: an exit that skips leave() still restores.
    on(process, 'exit', () => this.leave());
  }

  /** Draws a frame over the last one (each line cleared to its end, then everything below it). */
  draw(lines) {
    if (!this.#active) return;
    this.#out.write(`\x1b[H${lines.map((l) => `${l}\x1b[K`).join('\r\n')}\x1b[J`);
  }

  /** Gives the terminal back as it was. */
  leave() {
    if (!this.#active) return;
    this.#active = false;
    for (const off of this.#listeners.splice(0)) off();
    if (this.#in?.isTTY) {
      this.#in.setRawMode(false);
      this.#in.pause();
    }
    this.#out.write(LEAVE);
  }
}

module.exports = { Screen };
