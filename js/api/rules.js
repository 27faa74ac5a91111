'use strict';
// The rules every host applies to what a caller names: worker ids, class
// names, keys, alarm names and document ids. One module for the in-process
// host, its shards and the Cloudflare mapping, so the three refuse the same
// things with the same codes and messages. No Node builtins: it runs on
// workerd too.
const { DurableError, codes, label } = require('./errors');

/** Ids, keys, alarm names and document ids: at most this many bytes of UTF-8 (SQLite stores them as text). */
const MAX_NAME_BYTES = 2048;
/** A class's name: a file-system-safe folder name. */
const CLASS_NAME = /^[A-Za-z0-9_-]{1,64}$/;

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
  if (typeof id !== 'string') throw new DurableError(codes.ID, `${who}: a document id in collection ${collection} must be a string, got ${typeof id}`);
  if (!id.isWellFormed()) throw new DurableError(codes.ID, `${who}: document id ${JSON.stringify(id)} holds a lone surrogate and cannot be stored as UTF-8`);
  if (tooLong(id)) throw new DurableError(codes.ID, `${who}: a document id may be at most ${MAX_NAME_BYTES} bytes of UTF-8 (got ${utf8Length(id)})`);
}

/** A state key: a well-formed string of at most 2,048 bytes (ERR_DURABLE_NAME). */
function checkKey(who, key) {
  if (typeof key !== 'string') throw new DurableError(codes.NAME, `${who}: a key must be a string, got ${typeof key}`);
  if (!key.isWellFormed()) throw new DurableError(codes.NAME, `${who}: key ${JSON.stringify(key)} holds a lone surrogate and cannot be stored as UTF-8`);
  if (tooLong(key)) throw new DurableError(codes.NAME, `${who}: a key may be at most ${MAX_NAME_BYTES} bytes of UTF-8 (got ${utf8Length(key)})`);
}

/** An alarm's name: a well-formed string of at most 2,048 bytes (ERR_DURABLE_NAME). */
function checkAlarmName(who, name) {
  if (typeof name !== 'string' || !name.isWellFormed() || tooLong(name)) {
    throw new DurableError(codes.NAME, `${who}: an alarm name is a string of at most ${MAX_NAME_BYTES} bytes of UTF-8`);
  }
}

module.exports = { MAX_NAME_BYTES, CLASS_NAME, utf8Length, describe, checkWorkerId, checkDocumentId, checkKey, checkAlarmName };
