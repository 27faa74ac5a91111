'use strict';
// A class's declared collections, and how a document's fields become the
// column values SQLite indexes.
//
// A declared field is copied out of the document into a column of its own;
// the document itself is stored as bytes. So the column must say exactly what
// the document says: a value of the wrong type is refused at the write (a
// column that silently held null would make queries miss the document), and a
// missing field is null.
const { Buffer } = require('node:buffer');
const { DurableError, codes } = require('../api/errors');

const FIELD_TYPES = Object.freeze(['text', 'integer', 'real', 'boolean', 'date']);
const NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
const I64_MIN = -(2n ** 63n);
const I64_MAX = 2n ** 63n - 1n;

/**
 * @typedef {{ name: string, type: string }} Field
 * @typedef {{ name: string, index: number, fields: Field[], fieldIndex: Map<string, number> }} Decl
 * @typedef {{ list: Decl[], byName: Map<string, Decl> }} Collections
 */

/** @type {Collections} */
const NONE = Object.freeze({ list: [], byName: new Map() });

/**
 * Reads and checks `static collections` of a worker class.
 * @param {Function & { collections?: unknown }} Class
 * @param {string} className the name on disk, for messages
 * @returns {Collections}
 */
function declaredCollections(Class, className) {
  const spec = Class.collections;
  if (spec === undefined) return NONE;
  const bad = (what) =>
    new DurableError(codes.NAME, `${className}: static collections ${what}. Declare { name: { field: type } } with names matching [A-Za-z_][A-Za-z0-9_]{0,63} and types ${FIELD_TYPES.join(', ')}.`);
  if (spec === null || typeof spec !== 'object' || Array.isArray(spec)) throw bad('is not an object');
  const list = [];
  const byName = new Map();
  for (const [name, fields] of Object.entries(spec)) {
    if (!NAME.test(name)) throw bad(`has a collection named ${JSON.stringify(name)}`);
    if (fields === null || typeof fields !== 'object' || Array.isArray(fields)) {
      throw bad(`gives collection ${name} ${fields === null ? 'null' : typeof fields} instead of { field: type }`);
    }
    const decl = { name, index: list.length, fields: [], fieldIndex: new Map() };
    for (const [field, type] of Object.entries(fields)) {
      if (!NAME.test(field)) throw bad(`has a field named ${JSON.stringify(field)} in collection ${name}`);
      if (!FIELD_TYPES.includes(type)) throw bad(`declares ${name}.${field} as ${JSON.stringify(type)}`);
      decl.fieldIndex.set(field, decl.fields.length);
      decl.fields.push({ name: field, type });
    }
    list.push(decl);
    byName.set(name, decl);
  }
  return { list, byName };
}

/**
 * The error for `state.collection(name)` of a collection the class does not
 * declare, listing those it does.
 * @param {string} who names the worker
 * @param {unknown} name
 * @param {Collections} collections
 */
function noSuchCollection(who, name, collections) {
  const known = [...collections.byName.keys()];
  return new DurableError(
    codes.NAME,
    `${who}: there is no collection ${JSON.stringify(name)}; declared: ${known.length ? known.join(', ') : 'none'} (static collections = { ${typeof name === 'string' ? name : 'name'}: { field: type } })`,
  );
}

/** The declaration as the native core takes it. */
function nativeSpec(collections) {
  return collections.list.map((d) => ({
    name: d.name,
    fields: d.fields.map((f) => f.name),
    types: d.fields.map((f) => f.type),
  }));
}

/**
 * A field's value as its column holds it: a string, a number or a bigint
 * (booleans as 0/1, dates as epoch ms), null when absent; `undefined` when
 * the value is not of the field's type.
 * @param {string} type
 * @param {unknown} v
 * @param {boolean} [loose] for query values: a date may also be given as epoch ms
 */
function toColumn(type, v, loose = false) {
  if (v === undefined || v === null) return null;
  switch (type) {
    case 'text':
      return typeof v === 'string' && v.isWellFormed() ? v : undefined;
    case 'integer':
      if (typeof v === 'number') return Number.isSafeInteger(v) ? v : undefined;
      if (typeof v === 'bigint') return v >= I64_MIN && v <= I64_MAX ? v : undefined;
      return undefined;
    case 'real':
      return typeof v === 'number' && !Number.isNaN(v) ? v : undefined;
    case 'boolean':
      return typeof v === 'boolean' ? (v ? 1 : 0) : undefined;
    case 'date': {
      const ms = v instanceof Date ? v.getTime() : loose && typeof v === 'number' ? v : NaN;
      return Number.isSafeInteger(ms) ? ms : undefined;
    }
    default:
      return undefined;
  }
}

/** Describes a value for a type error. */
function describe(v) {
  if (v === null) return 'null';
  if (v instanceof Date) return 'an invalid Date';
  if (typeof v === 'number') return Number.isNaN(v) ? 'NaN' : `the number ${v}`;
  if (typeof v === 'string') return v.isWellFormed() ? 'a string' : 'a string with a lone surrogate';
  return typeof v === 'object' ? `an object (${v.constructor?.name ?? 'null prototype'})` : `a ${typeof v}`;
}

const WANT = {
  text: 'a string',
  integer: 'an integer (a safe-integer number or a 64-bit BigInt)',
  real: 'a number',
  boolean: 'a boolean',
  date: 'a valid Date',
};

/**
 * The column values of `doc` for `decl`'s fields, encoded; refuses a value of
 * the wrong type, naming the field.
 * @param {Decl} decl
 * @param {unknown} doc
 * @param {() => string} who
 * @returns {Buffer}
 */
function columnsOf(decl, doc, who) {
  const w = new ValueWriter();
  const obj = doc !== null && typeof doc === 'object' ? doc : null;
  for (const { name, type } of decl.fields) {
    const raw = obj !== null && Object.hasOwn(obj, name) ? obj[name] : undefined;
    const v = toColumn(type, raw);
    if (v === undefined) {
      throw new DurableError(codes.TYPE, `${who()}: field ${name} of collection ${decl.name} is declared ${type}, so it must be ${WANT[type]} or absent; got ${describe(raw)}`);
    }
    w.put(type, v);
  }
  return w.bytes();
}

/**
 * Column values in the layout the core reads: per value a tag byte, then
 * 0 null | 1 i64 LE | 2 f64 LE | 3 u32 LE byte length + UTF-8.
 */
class ValueWriter {
  #buf = Buffer.allocUnsafe(64);
  #len = 0;

  /**
   * @param {string} type the declared type (integer, boolean and date are i64)
   * @param {string | number | bigint | null} v from `toColumn`
   */
  put(type, v) {
    if (v === null) {
      this.#room(1);
      this.#buf[this.#len++] = 0;
    } else if (type === 'text') {
      const n = Buffer.byteLength(v);
      this.#room(5 + n);
      this.#buf[this.#len++] = 3;
      this.#buf.writeUInt32LE(n, this.#len);
      this.#buf.write(v, this.#len + 4, 'utf8');
      this.#len += 4 + n;
    } else if (type === 'real') {
      this.#room(9);
      this.#buf[this.#len++] = 2;
      this.#buf.writeDoubleLE(v, this.#len);
      this.#len += 8;
    } else {
      this.#room(9);
      this.#buf[this.#len++] = 1;
      this.#buf.writeBigInt64LE(BigInt(v), this.#len);
      this.#len += 8;
    }
  }

  /** The bytes written (a view, valid until the next `put`). */
  bytes() {
    return this.#buf.subarray(0, this.#len);
  }

  #room(n) {
    if (this.#len + n <= this.#buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.#buf.length * 2, this.#len + n));
    this.#buf.copy(next, 0, 0, this.#len);
    this.#buf = next;
  }
}

module.exports = { NONE, FIELD_TYPES, declaredCollections, nativeSpec, noSuchCollection, toColumn, columnsOf, describe, WANT, ValueWriter };
