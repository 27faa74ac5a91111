'use strict';
// `ctx.storage.sql`: SQL run synchronously on the object's own connection,
// as Cloudflare runs it. A statement that writes opens the turn's implicit
// transaction (./turns.js), committed at the end of the turn; the output gate
// holds results until that commit is durable. The rows of the last statement
// are read whole at `exec` (workerd steps one row ahead; the rows are the
// same unless a cursor is held across a write of the same table, see
// docs/durable-objects-on-node.md).

const { bindings } = require('./bindings');

/**
 * The rows of one `exec`, read from the cells the storage core packed: a tag
 * byte, then 0 null; 1 an f64; 2 text, 3 blob, each a u32 length and bytes.
 * @param {Buffer} cells
 * @param {number} rows
 * @param {number} width
 * @returns {unknown[][]}
 */
function unpack(cells, rows, width) {
  const out = new Array(rows);
  let at = 0;
  for (let r = 0; r < rows; r++) {
    const row = new Array(width);
    for (let c = 0; c < width; c++) {
      const tag = cells[at++];
      if (tag === 0) row[c] = null;
      else if (tag === 1) {
        row[c] = cells.readDoubleLE(at);
        at += 8;
      } else {
        const len = cells.readUInt32LE(at);
        at += 4;
        if (tag === 2) row[c] = cells.toString('utf8', at, at + len);
        else row[c] = cells.buffer.slice(cells.byteOffset + at, cells.byteOffset + at + len);
        at += len;
      }
    }
    out[r] = row;
  }
  return out;
}

/** The cursor `exec` returns: rows as objects, or as arrays through `raw()`, sharing one position. */
class SqlStorageCursor {
  #columns;
  #rows;
  #at = 0;
  #read;
  #written;

  /** @param {{ columns: string[], rows: unknown[][], rowsRead: number, rowsWritten: number }} r */
  constructor(r) {
    this.#columns = r.columns;
    this.#rows = r.rows;
    this.#read = r.rowsRead;
    this.#written = r.rowsWritten;
  }

  #object(row) {
    const o = {};
    // A repeated column name takes the last value, as on Cloudflare.
    for (let i = 0; i < row.length; i++) o[this.#columns[i]] = row[i];
    return o;
  }

  /** @returns {{ done: boolean, value?: Record<string, unknown> }} */
  next() {
    if (this.#at >= this.#rows.length) return { done: true, value: undefined };
    return { done: false, value: this.#object(this.#rows[this.#at++]) };
  }

  /** The rows not yet read, as objects. */
  toArray() {
    const out = [];
    while (this.#at < this.#rows.length) out.push(this.#object(this.#rows[this.#at++]));
    return out;
  }

  /** The one row of the result; throws when there are none or several. */
  one() {
    const left = this.#rows.length - this.#at;
    if (left === 0) throw new Error('Expected exactly one result from SQL query, but got no results.');
    if (left > 1) {
      this.#at = this.#rows.length;
      throw new Error('Expected exactly one result from SQL query, but got multiple results.');
    }
    return this.#object(this.#rows[this.#at++]);
  }

  /** The rows as arrays, from the cursor's position on (it advances the cursor too). */
  raw() {
    const self = this;
    const rows = this.#rows;
    const it = {
      next() {
        if (self.#at >= rows.length) return { done: true, value: undefined };
        return { done: false, value: rows[self.#at++] };
      },
      toArray() {
        const out = [];
        while (self.#at < rows.length) out.push(rows[self.#at++]);
        return out;
      },
      [Symbol.iterator]() {
        return it;
      },
    };
    return it;
  }

  get columnNames() {
    return [...this.#columns];
  }

  get rowsRead() {
    return this.#read;
  }

  get rowsWritten() {
    return this.#written;
  }

  [Symbol.iterator]() {
    return this;
  }
}

/** `ctx.storage.sql`. */
class SqlStorage {
  #native;
  #turns;

  /**
   * @param {object} native the object's NativeObject
   * @param {import('./turns').Turns} turns
   */
  constructor(native, turns) {
    this.#native = native;
    this.#turns = turns;
  }

  /**
   * Runs `query` (one or more statements; only the last may have `?`
   * parameters) with `values` bound: numbers as REAL, strings as TEXT,
   * ArrayBuffers and views as BLOB, null as NULL.
   * @param {string} query
   * @param {...unknown} values
   */
  exec(query, ...values) {
    const q = String(query);
    this.#turns.check();
    const [binds, text] = bindings(values);
    const out = this.#native.exec(q, binds, text);
    this.#turns.wrote(out);
    if (out.error != null) throw new Error(out.error);
    return new SqlStorageCursor({
      columns: out.columns,
      rows: unpack(out.cells, out.rows, out.columns.length),
      rowsRead: out.rowsRead,
      rowsWritten: out.rowsWritten,
    });
  }

  /** Bytes the object's database uses. */
  get databaseSize() {
    this.#turns.check();
    return this.#native.databaseSize();
  }
}

module.exports = { SqlStorage, SqlStorageCursor, unpack };
