'use strict';
// The rules every host applies to what a caller names and stores: worker
// ids, class names, keys, alarm names and document ids; the size caps; the
// alarm retry backoff. One module for the in-process
// host, its shards and the Cloudflare mapping, so the three refuse the same
// things with the same codes and messages. No Node builtins: it runs on
// workerd too.
const { DurableError, codes, label } = require('./errors');

/** Ids, keys, alarm names and document ids: at most this many bytes of UTF-8 (SQLite stores them as text). */
const MAX_NAME_BYTES = 2048;
/** A class's name: a file-system-safe folder name. */
const CLASS_NAME = /^[A-Za-z0-9_-]{1,64}$/;
/** One resident value, encoded: at most 128 KiB. */
const MAX_VALUE_BYTES = 128 * 1024;
/** A worker's resident state, keys and encoded values: at most 1 MiB. */
const MAX_STATE_BYTES = 1024 * 1024;
/** One document, encoded: at most 1 MiB. */
const MAX_DOCUMENT_BYTES = 1024 * 1024;

/** Bytes of `s` as UTF-8 (`s` well-formed). */
function utf8Length(s) {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      n += 4;
      i++;
    } else n += 3;
  }
  return n;
}

/** Whether well-formed `s` is over MAX_NAME_BYTES; counted only when it could be (3 bytes a UTF-16 unit at most). */
const tooLong = (s) => s.length * 3 > MAX_NAME_BYTES && utf8Length(s) > MAX_NAME_BYTES;

/** `who` names the worker in a message: a string, or a function called only when a message is made (hot paths pass the function). */
const named = (who) => (typeof who === 'function' ? who() : who);

/** How a value that is not what was asked for is named in a message. */
function describe(v) {
  if (typeof v === 'function') return v.name ? `function ${v.name}` : 'an anonymous function';
  if (v === null) return 'null';
  return typeof v === 'string' ? JSON.stringify(v) : typeof v;
}

/** A worker's id: a non-empty, well-formed string of at most 2,048 bytes of UTF-8 (ERR_DURABLE_ID). */
function checkWorkerId(className, id) {
  if (typeof id !== 'string' || id.length === 0) {
    throw new DurableError(codes.ID, `${className}: an id must be a non-empty string, got ${id === '' ? 'an empty string' : describe(id)}`);
  }
  if (!id.isWellFormed()) throw new DurableError(codes.ID, `${label(className, id)}: the id holds a lone surrogate and has no UTF-8 form`);
  if (tooLong(id)) throw new DurableError(codes.ID, `${label(className, id)}: an id may be at most ${MAX_NAME_BYTES} bytes of UTF-8 (got ${utf8Length(id)})`);
}

/** A document's id in `collection`: a well-formed string of at most 2,048 bytes (ERR_DURABLE_ID). `who` names the worker. */
function checkDocumentId(who, collection, id) {
  if (typeof id !== 'string') throw new DurableError(codes.ID, `${named(who)}: a document id in collection ${collection} must be a string, got ${typeof id}`);
  if (!id.isWellFormed()) throw new DurableError(codes.ID, `${named(who)}: document id ${JSON.stringify(id)} holds a lone surrogate and cannot be stored as UTF-8`);
  if (tooLong(id)) throw new DurableError(codes.ID, `${named(who)}: a document id may be at most ${MAX_NAME_BYTES} bytes of UTF-8 (got ${utf8Length(id)})`);
}

/** A state key: a well-formed string of at most 2,048 bytes (ERR_DURABLE_NAME). */
function checkKey(who, key) {
  if (typeof key !== 'string') throw new DurableError(codes.NAME, `${named(who)}: a key must be a string, got ${typeof key}`);
  if (!key.isWellFormed()) throw new DurableError(codes.NAME, `${named(who)}: key ${JSON.stringify(key)} holds a lone surrogate and cannot be stored as UTF-8`);
  if (tooLong(key)) throw new DurableError(codes.NAME, `${named(who)}: a key may be at most ${MAX_NAME_BYTES} bytes of UTF-8 (got ${utf8Length(key)})`);
}

/**
 * An alarm's name: a well-formed string of at most 2,048 bytes, not starting
 * with NUL, which marks a schedule's alarm (ERR_DURABLE_NAME).
 */
function checkAlarmName(who, name) {
  if (typeof name !== 'string' || !name.isWellFormed() || tooLong(name)) {
    throw new DurableError(codes.NAME, `${named(who)}: an alarm name is a string of at most ${MAX_NAME_BYTES} bytes of UTF-8`);
  }
  if (name.charCodeAt(0) === 0) throw new DurableError(codes.NAME, `${named(who)}: alarm names starting with NUL are reserved for schedules (state.schedule)`);
}

/** setAlarm's time: a Date or finite epoch milliseconds, as whole milliseconds (a TypeError otherwise). */
function alarmTime(who, at) {
  const ms = at instanceof Date ? at.getTime() : at;
  if (typeof ms !== 'number' || !Number.isFinite(ms)) throw new TypeError(`${named(who)}: setAlarm(at) takes a Date or epoch milliseconds, got ${String(at)}`);
  return Math.floor(ms);
}

/** The refusal of a value over MAX_VALUE_BYTES (ERR_DURABLE_STATE_TOO_LARGE). */
function valueTooLarge(who, key, bytes) {
  return new DurableError(
    codes.STATE_TOO_LARGE,
    `${named(who)}: the value for key ${JSON.stringify(key)} is ${bytes} bytes encoded; a value may be at most ${MAX_VALUE_BYTES} (128 KiB). Keep what accumulates in a collection.`,
  );
}

/** The refusal of a write that would bring the resident state over MAX_STATE_BYTES. */
function stateTooLarge(who, key, total) {
  return new DurableError(
    codes.STATE_TOO_LARGE,
    `${named(who)}: setting key ${JSON.stringify(key)} would bring the worker's state to ${total} bytes; a worker may hold at most ${MAX_STATE_BYTES} (1 MiB). Keep what accumulates in a collection.`,
  );
}

/** The refusal of a document over MAX_DOCUMENT_BYTES; `where` names the worker, collection and document. */
function documentTooLarge(where, bytes) {
  return new DurableError(codes.STATE_TOO_LARGE, `${where}: the document is ${bytes} bytes encoded; a document may be at most ${MAX_DOCUMENT_BYTES} (1 MiB)`);
}

/** The refusal of a call to a worker whose mailbox has `limit` calls waiting (ERR_DURABLE_BUSY). */
function mailboxFull(who, limit) {
  return new DurableError(codes.BUSY, `${who}: the mailbox is full (${limit} calls waiting); the worker is not keeping up with its callers`);
}

/** Delay before retry `attempt` (1, 2, …) of a failed alarm: 1 s, 2 s, 4 s … at most 5 minutes. */
function alarmBackoff(attempt) {
  return Math.min(1000 * 2 ** (attempt - 1), 300_000);
}

/**
 * The `timeout` of `host.get(Class, id, { timeout })`: ms, a positive
 * integer, or Infinity for none (overriding the host's callTimeout).
 * @returns {number | undefined}
 */
function stubTimeout(options, who) {
  if (options === undefined) return undefined;
  if (options === null || typeof options !== 'object') throw new TypeError(`get(${who}): options must be an object { timeout }, got ${describe(options)}`);
  for (const k of Object.keys(options)) if (k !== 'timeout') throw new TypeError(`get(${who}): unknown option ${k} (the only option is timeout)`);
  const t = options.timeout;
  if (t === undefined || t === Infinity || (Number.isInteger(t) && t > 0)) return t;
  throw new RangeError(`get(${who}): timeout must be a positive integer of ms, or Infinity for none, got ${typeof t === 'number' ? t : describe(t)}`);
}

module.exports = {
  stubTimeout,
  MAX_NAME_BYTES,
  MAX_VALUE_BYTES,
  MAX_STATE_BYTES,
  MAX_DOCUMENT_BYTES,
  CLASS_NAME,
  utf8Length,
  describe,
  checkWorkerId,
  checkDocumentId,
  checkKey,
  checkAlarmName,
  alarmTime,
  valueTooLarge,
  stateTooLarge,
  documentTooLarge,
  mailboxFull,
  alarmBackoff,
};
