'use strict';
// Collections inside workerd, over the object's SQLite database
// (ctx.storage.sql), with the table shape and the query meaning of the Node
// host (src/collections/, js/collections/query.js):
//
//   "c_orders"(id TEXT PRIMARY KEY NOT NULL, tag INTEGER NOT NULL, doc BLOB NOT NULL, "f_status", "f_total")
//   index "orders.status" ON "c_orders"("f_status", id)        one per field
//   fields(collection, field, type, active)                    what each column holds
//
// Queries are planned by js/collections/query.js itself (the same checks, errors and
// `scan: true` evaluator), then written as SQL here: null-aware $eq/$ne as
// IS / IS NOT, code-point string order (SQLite's BINARY collation is UTF-8
// byte order), ties by id in the order's direction.
//
// What differs: a document is stored as wire text (codec tag 2, js/cloudflare/
// wire.js) because there is no v8.serialize in workerd, so cycles are refused;
// and writes go straight to SQL inside the object's implicit transaction
// (workerd's output gate holds the call's result until they are durable), so
// there is no overlay of unlanded writes to merge.
const { DurableError, codes } = require('../api/errors');
const { checkDocumentId, MAX_DOCUMENT_BYTES, documentTooLarge } = require('../api/rules');
const { toColumn, describe, WANT } = require('../collections/declarations');
const { plan, evaluate } = require('../collections/query');
const wire = require('./wire');

const FIELDS_DDL = 'CREATE TABLE IF NOT EXISTS fields(collection TEXT NOT NULL, field TEXT NOT NULL, type TEXT NOT NULL, active INTEGER NOT NULL, PRIMARY KEY(collection, field)) WITHOUT ROWID';

const table = (name) => `"c_${name}"`;
const column = (field) => `"f_${field}"`;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** SQL takes numbers, strings and null; a BigInt column value goes in as a number. */
function bindable(v) {
  return typeof v === 'bigint' ? Number(v) : v;
}

/**
 * Creates or brings up to date the tables of `collections` (a js/collections/declarations.js
 * declaration) and backfills newly declared fields from the stored documents.
 * Nothing is dropped: a field that left the declaration is marked inactive.
 * @param {SqlStorage} sql
 * @param {import('../collections/declarations').Collections} collections
 */
function ensureTables(sql, collections) {
  if (collections.list.length === 0) return;
  sql.exec(FIELDS_DDL);
  const tables = new Set([...sql.exec("SELECT name FROM sqlite_master WHERE type = 'table'")].map((r) => r.name));
  for (const decl of collections.list) {
    const t = table(decl.name);
    if (!tables.has(`c_${decl.name}`)) {
      const cols = decl.fields.map((f) => `, ${column(f.name)}`).join('');
      sql.exec(`CREATE TABLE ${t}(id TEXT PRIMARY KEY NOT NULL, tag INTEGER NOT NULL, doc BLOB NOT NULL${cols})`);
      for (const f of decl.fields) {
        sql.exec(`CREATE INDEX IF NOT EXISTS "${decl.name}.${f.name}" ON ${t}(${column(f.name)}, id)`);
        markActive(sql, decl.name, f);
      }
      continue;
    }
    const have = new Set([...sql.exec(`SELECT name FROM pragma_table_info('c_${decl.name}')`)].map((r) => r.name));
    const stored = new Map([...sql.exec('SELECT field, type, active FROM fields WHERE collection = ?', decl.name)].map((r) => [r.field, r]));
    const refill = [];
    for (const f of decl.fields) {
      const s = stored.get(f.name);
      if (!have.has(`f_${f.name}`)) sql.exec(`ALTER TABLE ${t} ADD COLUMN ${column(f.name)}`);
      sql.exec(`CREATE INDEX IF NOT EXISTS "${decl.name}.${f.name}" ON ${t}(${column(f.name)}, id)`);
      if (s === undefined || !s.active || s.type !== f.type) refill.push(f);
      markActive(sql, decl.name, f);
    }
    for (const s of stored.values()) {
      if (!decl.fieldIndex.has(s.field) && s.active) sql.exec('UPDATE fields SET active = 0 WHERE collection = ? AND field = ?', decl.name, s.field);
    }
    if (refill.length > 0) backfill(sql, decl, refill);
  }
}

function markActive(sql, coll, f) {
  sql.exec('INSERT INTO fields(collection, field, type, active) VALUES (?, ?, ?, 1) ON CONFLICT(collection, field) DO UPDATE SET type = excluded.type, active = 1', coll, f.name, f.type);
}

/** Fills the columns of `fields` from every stored document; a value of the wrong type is null. */
function backfill(sql, decl, fields) {
  const rows = [...sql.exec(`SELECT id, tag, doc FROM ${table(decl.name)}`)];
  const sets = fields.map((f) => `${column(f.name)} = ?`).join(', ');
  for (const r of rows) {
    const doc = r.tag === wire.TAG_WIRE ? wire.decode(decoder.decode(r.doc)) : undefined;
    const vals = fields.map((f) => bindable(toColumn(f.type, doc?.[f.name]) ?? null));
    sql.exec(`UPDATE ${table(decl.name)} SET ${sets} WHERE id = ?`, ...vals, r.id);
  }
}

class Collection {
  #decl;
  #sql;
  #who;

  /**
   * @param {import('../collections/declarations').Decl} decl
   * @param {SqlStorage} sql
   * @param {() => string} who
   */
  constructor(decl, sql, who) {
    this.#decl = decl;
    this.#sql = sql;
    this.#who = who;
  }

  get name() {
    return this.#decl.name;
  }

  /** Writes `doc` under `id`; refused, with nothing changed, as on Node. */
  put(id, doc) {
    this.#checkId(id);
    const where = () => `${this.#who()}, collection ${this.#decl.name}, document ${JSON.stringify(id)}`;
    const obj = doc !== null && typeof doc === 'object' ? doc : null;
    const cols = this.#decl.fields.map(({ name, type }) => {
      const raw = obj !== null && Object.hasOwn(obj, name) ? obj[name] : undefined;
      const v = toColumn(type, raw);
      if (v === undefined) {
        throw new DurableError(codes.TYPE, `${where()}: field ${name} of collection ${this.#decl.name} is declared ${type}, so it must be ${WANT[type]} or absent; got ${describe(raw)}`);
      }
      return bindable(v);
    });
    const bytes = encoder.encode(wire.encode(doc, where));
    if (bytes.length > MAX_DOCUMENT_BYTES) throw documentTooLarge(where(), bytes.length);
    const names = ['id', 'tag', 'doc', ...this.#decl.fields.map((f) => column(f.name))];
    const updates = names
      .slice(1)
      .map((c) => `${c} = excluded.${c}`)
      .join(', ');
    this.#sql.exec(
      `INSERT INTO ${table(this.#decl.name)}(${names.join(', ')}) VALUES (${names.map(() => '?').join(', ')}) ON CONFLICT(id) DO UPDATE SET ${updates}`,
      id,
      wire.TAG_WIRE,
      bytes.buffer,
      ...cols,
    );
  }

  async get(id) {
    this.#checkId(id);
    const rows = [...this.#sql.exec(`SELECT tag, doc FROM ${table(this.#decl.name)} WHERE id = ?`, id)];
    return rows.length === 0 ? undefined : this.#decode(id, rows[0]);
  }

  async delete(id) {
    this.#checkId(id);
    const r = this.#sql.exec(`DELETE FROM ${table(this.#decl.name)} WHERE id = ?`, id);
    return r.rowsWritten > 0;
  }

  async update(id, fn) {
    this.#checkId(id);
    if (typeof fn !== 'function') throw new TypeError(`${this.#who()}: update(id, fn) takes a function`);
    const next = await fn(await this.get(id));
    if (next === undefined) return undefined;
    this.put(id, next);
    return next;
  }

  async count(where) {
    const p = plan(this.#decl, { where }, { scan: false, who: this.#who });
    const { sql, args } = this.#where(p);
    return [...this.#sql.exec(`SELECT count(*) AS n FROM ${table(this.#decl.name)}${sql}`, ...args)][0].n;
  }

  async find(options = {}) {
    if (options === null || typeof options !== 'object') throw new TypeError(`${this.#who()}: find takes { where?, orderBy?, limit?, scan? }`);
    const scan = options.scan === true;
    const p = plan(this.#decl, options, { scan, who: this.#who });
    if (p.limit === 0) return [];
    if (scan) {
      const rows = [...this.#sql.exec(`SELECT id, tag, doc FROM ${table(this.#decl.name)}`)].map((r) => ({ id: r.id, doc: this.#decode(r.id, r) }));
      return evaluate(p, rows).map((r) => r.doc);
    }
    const { sql, args } = this.#where(p);
    const dir = p.desc ? 'DESC' : 'ASC';
    const order = p.order === null ? ` ORDER BY id ${dir}` : ` ORDER BY ${column(p.order.field)} ${dir}, id ${dir}`;
    const limit = p.limit === undefined ? '' : ` LIMIT ${p.limit}`;
    return [...this.#sql.exec(`SELECT id, tag, doc FROM ${table(this.#decl.name)}${sql}${order}${limit}`, ...args)].map((r) => this.#decode(r.id, r));
  }

  /** A plan's conditions as SQL (declared fields only: scans never get here). */
  #where(p) {
    const parts = [];
    const args = [];
    for (const c of p.conds) {
      const col = column(c.field);
      const v = c.values.map(bindable);
      switch (c.op) {
        case 0:
          parts.push(v[0] === null ? `${col} IS NULL` : `${col} = ?`);
          if (v[0] !== null) args.push(v[0]);
          break;
        case 1:
          parts.push(v[0] === null ? `${col} IS NOT NULL` : `${col} IS NOT ?`);
          if (v[0] !== null) args.push(v[0]);
          break;
        case 6:
          parts.push(v.length === 0 ? '0' : `${col} IN (${v.map(() => '?').join(', ')})`);
          args.push(...v);
          break;
        default:
          parts.push(`${col} ${['<', '<=', '>', '>='][c.op - 2]} ?`);
          args.push(v[0]);
      }
    }
    return { sql: parts.length ? ` WHERE ${parts.join(' AND ')}` : '', args };
  }

  #decode(id, row) {
    if (row.tag !== wire.TAG_WIRE) {
      throw new DurableError(
        codes.STATE_FORMAT,
        `${this.#who()}, collection ${this.#decl.name}, document ${JSON.stringify(id)}: stored with codec tag ${row.tag}, which durable-workers on workerd does not read (it reads tag ${wire.TAG_WIRE})`,
      );
    }
    return wire.decode(decoder.decode(row.doc));
  }

  #checkId(id) {
    checkDocumentId(() => this.#who(), this.#decl.name, id);
  }
}

module.exports = { Collection, ensureTables };
