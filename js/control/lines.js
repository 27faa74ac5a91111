'use strict';
// Newline-delimited frames over a byte stream, bounded: the control socket's
// framing on both ends. A peer that sends a line longer than the bound, or
// never ends one, costs at most the bound in memory before it is reported;
// nothing it sends can grow a buffer without limit.

/** The longest line the server reads: a request is a few hundred bytes. */
const MAX_REQUEST_LINE = 1024 * 1024;

class LineReader {
  /** @type {Buffer[]} the start of the current line, in pieces */
  #pieces = [];
  #length = 0;
  #max;
  #onLine;
  #onOverflow;
  #over = false;

  /**
   * @param {number} max bytes a line may hold, its newline excluded
   * @param {(line: string) => void} onLine each complete line, as UTF-8 text without its newline (or a trailing CR)
   * @param {(length: number) => void} onOverflow once, when a line passes `max`; nothing is read after it
   */
  constructor(max, onLine, onOverflow) {
    this.#max = max;
    this.#onLine = onLine;
    this.#onOverflow = onOverflow;
  }

  /** Feeds bytes read from the stream. */
  push(chunk) {
    let start = 0;
    while (!this.#over) {
      const nl = chunk.indexOf(0x0a, start);
      const end = nl === -1 ? chunk.length : nl;
      if (this.#length + (end - start) > this.#max) {
        this.#over = true;
        this.#pieces = [];
        this.#onOverflow(this.#length + (end - start));
        return;
      }
      if (nl === -1) {
        if (end > start) {
          this.#pieces.push(chunk.subarray(start, end));
          this.#length += end - start;
        }
        return;
      }
      const line = this.#pieces.length === 0 ? chunk.subarray(start, end) : Buffer.concat([...this.#pieces, chunk.subarray(start, end)]);
      this.#pieces = [];
      this.#length = 0;
      start = nl + 1;
      const text = line.toString('utf8');
      this.#onLine(text.endsWith('\r') ? text.slice(0, -1) : text);
    }
  }
}

module.exports = { LineReader, MAX_REQUEST_LINE };
