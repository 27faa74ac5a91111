'use strict';
// One object's key-value table as `ctx.storage` and `ctx.storage.kv` both
// use it: keys as the bytes workerd makes of them (./keys.js), values as V8
// serializer bytes, every write joining the turn's transaction (./turns.js).

const { compileList } = require('./list-range');
const { decode } = require('./storage-values');
const { toBytes, fromBytes } = require('./keys');

/**
 * The pairs a `kvList` packed: each key and value a u32 length and bytes.
 * @param {{ count: number, data: Buffer }} listed
 * @returns {Array<[string, unknown]>}
 */
function pairs(listed) {
  const out = new Array(listed.count);
  const d = listed.data;
  let at = 0;
  for (let i = 0; i < listed.count; i++) {
    const klen = d.readUInt32LE(at);
    const key = fromBytes(d.subarray(at + 4, at + 4 + klen));
    at += 4 + klen;
    const vlen = d.readUInt32LE(at);
    const value = decode(d.subarray(at + 4, at + 4 + vlen));
    at += 4 + vlen;
    out[i] = [key, value];
  }
  return out;
}

class Store {
  /**
   * @param {object} native the object's NativeObject
   * @param {import('./turns').Turns} turns
   */
  constructor(native, turns) {
    this.native = native;
    this.turns = turns;
  }

  /** A value, or undefined. @param {string} key */
  get(key) {
    this.turns.check();
    const [v] = this.native.kvGet([toBytes(String(key))]);
    return v == null ? undefined : decode(v);
  }

  /** @param {string[]} keys @param {Buffer[]} values serialized */
  put(keys, values) {
    this.turns.check();
    const out = this.native.kvPut(keys.map(toBytes), values);
    this.turns.wrote(out);
    if (out.error != null) throw new Error(out.error);
  }

  /** How many of `keys` were there. @param {string[]} keys */
  delete(keys) {
    this.turns.check();
    const [n, began] = this.native.kvDelete(keys.map(toBytes));
    this.turns.wrote({ began });
    return n;
  }

  /**
   * The pairs in range, in order.
   * @param {object | undefined} options
   * @param {string} api who asks, for option errors
   */
  list(options, api) {
    this.turns.check();
    const r = compileList(options ?? {}, api);
    if (r === null) return [];
    return pairs(this.native.kvList(r.start ?? Buffer.alloc(0), r.end ?? null, r.reverse, r.limit ?? null));
  }
}

module.exports = { Store };
