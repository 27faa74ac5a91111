'use strict';
// Queries on a collection: checked here, against the declaration, before
// anything reaches SQL; then either handed to the core as field indexes,
// operator codes and bound values (an indexed read), or evaluated here over
// decoded documents (`scan: true`).
//
// Both paths mean the same thing, and the evaluator below is written to match
// SQLite's: null sorts first and matches only `= null` / `!= v`; numbers sort
// before strings; strings compare by code point (UTF-8 byte order); ties are
// broken by id, in the same direction.
const { DurableError, codes } = require('../api/errors');
const { toColumn, describe, WANT, ValueWriter } = require('./declarations');

const OPS = Object.freeze({ $eq: 0, $ne: 1, $lt: 2, $lte: 3, $gt: 4, $gte: 5, $in: 6 });
const EQ = 0;
const NE = 1;
const IN = 6;

/**
 * @typedef {{ field: string, index: number, type: string | null, op: number, values: any[] }} Cond
 *   index -1 and type null: an undeclared field (scan only)
 * @typedef {{ conds: Cond[], order: { field: string, index: number, type: string | null } | null, desc: boolean, limit: number | undefined }} Plan
 */

function isPlainObject(v) {
  if (v === null || typeof v !== 'object') return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

/** Field `name` of `decl` as a query names it (`what`, for the message); an undeclared one only when scanning. */
function fieldOf(decl, name, what, scan, who) {
  const index = decl.fieldIndex.get(name);
  if (index !== undefined) return { field: name, index, type: decl.fields[index].type };
  if (scan) return { field: name, index: -1, type: null };
  throw new DurableError(
    codes.NOT_INDEXED,
    `${who()}: ${what} ${JSON.stringify(name)} is not a declared field of collection ${decl.name} (declared: ${decl.fields.map((f) => f.name).join(', ') || 'none'}); declare it in static collections, or pass scan: true to read every document`,
  );
}

/** `v` compared with field `f` by `op`, as the column holds it. */
function valueOf(decl, f, v, op, who) {
  if (v === undefined || (v === null && op !== EQ && op !== NE)) {
    throw new TypeError(`${who()}: where.${f.field} compares with ${v}; only $eq and $ne take null`);
  }
  if (f.type === null) return scalar(v);
  const c = toColumn(f.type, v, true);
  if (c === undefined) {
    throw new DurableError(
      codes.TYPE,
      `${who()}: where.${f.field} gives ${describe(v)}, but ${f.field} of collection ${decl.name} is declared ${f.type} (${WANT[f.type]}${f.type === 'date' ? ' or epoch milliseconds' : ''})`,
    );
  }
  return c;
}

const condOf = (f, op, values) => ({ field: f.field, index: f.index, type: f.type, op, values });

/**
 * Checks a query against collection `decl` and normalizes its values.
 * @param {import('./declarations').Decl} decl
 * @param {{ where?: object, orderBy?: string | [string, 'asc' | 'desc'], limit?: number }} q
 * @param {{ scan: boolean, who: () => string }} opts
 * @returns {Plan}
 */
function plan(decl, q, { scan, who }) {
  const where = q.where;
  if (where !== undefined && !isPlainObject(where)) {
    throw new TypeError(`${who()}: where must be an object of { field: value | { $op: value } }`);
  }
  const conds = [];
  if (where !== undefined) {
    for (const name in where) {
      if (!Object.hasOwn(where, name)) continue;
      const f = fieldOf(decl, name, 'where names field', scan, who);
      const given = where[name];
      if (!isPlainObject(given)) {
        conds.push(condOf(f, EQ, [valueOf(decl, f, given, EQ, who)]));
        continue;
      }
      const keys = Object.keys(given);
      if (keys.length === 0) throw new TypeError(`${who()}: where.${name} is an empty object; give a value or { $op: value }`);
      for (const k of keys) {
        const op = Object.hasOwn(OPS, k) ? OPS[k] : undefined;
        if (op === undefined) {
          throw new TypeError(`${who()}: where.${name} uses ${JSON.stringify(k)}; the operators are ${Object.keys(OPS).join(', ')}`);
        }
        if (op === IN) {
          if (!Array.isArray(given[k])) throw new TypeError(`${who()}: where.${name}.$in takes an array`);
          conds.push(
            condOf(
              f,
              op,
              given[k].map((v) => valueOf(decl, f, v, IN, who)),
            ),
          );
        } else {
          conds.push(condOf(f, op, [valueOf(decl, f, given[k], op, who)]));
        }
      }
    }
  }
  let order = null;
  let desc = false;
  if (q.orderBy !== undefined) {
    const [name, dir = 'asc'] = Array.isArray(q.orderBy) ? q.orderBy : [q.orderBy];
    if (typeof name !== 'string' || (dir !== 'asc' && dir !== 'desc')) {
      throw new TypeError(`${who()}: orderBy is a field name or [field, 'asc' | 'desc']`);
    }
    order = fieldOf(decl, name, 'orderBy names field', scan, who);
    desc = dir === 'desc';
  }
  const limit = q.limit;
  if (limit !== undefined && !(Number.isSafeInteger(limit) && limit >= 0)) {
    throw new RangeError(`${who()}: limit must be a non-negative integer, got ${String(limit)}`);
  }
  return { conds, order, desc, limit };
}

/** A plan's conditions as the core's parallel arrays and encoded values. */
function nativeConds(p) {
  const w = new ValueWriter();
  const fields = [];
  const ops = [];
  const counts = [];
  for (const c of p.conds) {
    fields.push(c.index);
    ops.push(c.op);
    counts.push(c.values.length);
    for (const v of c.values) w.put(c.type, v);
  }
  return { fields, ops, counts, values: w.bytes() };
}

// --- the evaluator (scan: true) ------------------------------------------

/** An undeclared field's value as a scalar SQLite would compare; anything else is null. */
function scalar(v) {
  switch (typeof v) {
    case 'string':
      return v;
    case 'number':
      return Number.isNaN(v) ? null : v;
    case 'bigint':
      return v;
    case 'boolean':
      return v ? 1 : 0;
    case 'object':
      if (v instanceof Date) {
        const ms = v.getTime();
        return Number.isNaN(ms) ? null : ms;
      }
      return null;
    default:
      return null;
  }
}

/** Compares strings by code point, which is the order of their UTF-8 bytes. */
function compareText(a, b) {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    let x = a.charCodeAt(i);
    let y = b.charCodeAt(i);
    if (x === y) continue;
    // Surrogates (astral code points) come after U+E000–U+FFFF in code point
    // order but before them in UTF-16 units.
    if (x >= 0xd800 && y >= 0xd800) {
      x = x >= 0xe000 ? x - 0x800 : x + 0x2000;
      y = y >= 0xe000 ? y - 0x800 : y + 0x2000;
    }
    return x < y ? -1 : 1;
  }
  return a.length === b.length ? 0 : a.length < b.length ? -1 : 1;
}

function rank(v) {
  return v === null ? 0 : typeof v === 'string' ? 2 : 1;
}

/** SQLite's order over null, numbers (and bigints) and strings. */
function compareValues(a, b) {
  const ra = rank(a);
  const rb = rank(b);
  if (ra !== rb) return ra - rb;
  if (ra === 0) return 0;
  if (ra === 2) return compareText(a, b);
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The value a condition or order sees in `doc` for field `f`. */
function valueIn(doc, f) {
  const raw = doc !== null && typeof doc === 'object' && Object.hasOwn(doc, f.field) ? doc[f.field] : undefined;
  if (f.type === null) return scalar(raw);
  // A stored document whose value does not fit its declared type (possible
  // only for one written before the field was declared) has a null column.
  return toColumn(f.type, raw) ?? null;
}

function holds(c, v) {
  switch (c.op) {
    case EQ:
      return c.values[0] === null ? v === null : v !== null && compareValues(v, c.values[0]) === 0;
    case NE:
      return !holds({ op: EQ, values: c.values }, v);
    case IN:
      return v !== null && c.values.some((x) => compareValues(v, x) === 0);
    default: {
      if (v === null) return false;
      const d = compareValues(v, c.values[0]);
      return c.op === 2 ? d < 0 : c.op === 3 ? d <= 0 : c.op === 4 ? d > 0 : d >= 0;
    }
  }
}

/**
 * Filters, orders and bounds decoded documents as the indexed path would.
 * @param {Plan} p
 * @param {{ id: string, doc: unknown }[]} rows
 */
/** Whether `doc` meets every condition of plan `p`. */
function matches(p, doc) {
  return p.conds.every((c) => holds(c, valueIn(doc, c)));
}

function evaluate(p, rows) {
  const kept = rows.filter((r) => matches(p, r.doc));
  const sign = p.desc ? -1 : 1;
  const keyed = kept.map((r) => ({ r, k: p.order === null ? null : valueIn(r.doc, p.order) }));
  keyed.sort((a, b) => sign * (compareValues(a.k, b.k) || compareText(a.r.id, b.r.id)));
  const out = keyed.map((x) => x.r);
  return p.limit === undefined ? out : out.slice(0, p.limit);
}

module.exports = { plan, nativeConds, matches, evaluate, compareText, compareValues };
