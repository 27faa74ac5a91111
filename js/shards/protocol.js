'use strict';
// What crosses between the host thread and a shard: errors as plain data, and
// where a worker lives.
//
// Messages are structured clones, and a structured clone of an Error keeps its
// message and stack but drops its own properties, `code` first among them. An
// error a method throws must reach its caller as itself (a DurableError with
// its code, a TypeError as a TypeError, a custom `status` kept), so errors
// cross as a description and are rebuilt on the other side.
const { Buffer } = require('node:buffer');
const { DurableError } = require('../api/errors');

const STANDARD = { Error, TypeError, RangeError, SyntaxError, ReferenceError, EvalError, URIError };

/**
 * @param {unknown} err anything thrown
 * @returns {object} a structured-cloneable description
 */
function serializeError(err) {
  if (!(err instanceof Error)) {
    try {
      return { thrown: structuredClone(err) };
    } catch {
      return { thrown: String(err) };
    }
  }
  const props = {};
  for (const k of Object.keys(err)) {
    if (k === 'cause') continue;
    try {
      props[k] = structuredClone(err[k]);
    } catch {
      // A property that cannot cross (a function, a socket) stays behind.
    }
  }
  return {
    name: err.name,
    ctor: err.constructor?.name,
    message: err.message,
    stack: err.stack,
    props,
    cause: 'cause' in err ? serializeError(err.cause) : undefined,
  };
}

/** Rebuilds what `serializeError` described. */
function deserializeError(d) {
  if ('thrown' in d) return d.thrown;
  const code = d.props?.code;
  let e;
  if (typeof code === 'string' && code.startsWith('ERR_DURABLE_')) e = new DurableError(code, d.message);
  else e = new (STANDARD[d.ctor] ?? STANDARD[d.name] ?? Error)(d.message);
  Object.assign(e, d.props);
  if (e.name !== d.name) Object.defineProperty(e, 'name', { value: d.name, writable: true, configurable: true });
  if (d.stack !== undefined) e.stack = d.stack;
  if (d.cause !== undefined) e.cause = deserializeError(d.cause);
  return e;
}

/**
 * Every message between the host thread and a shard is `{ op, ...fields }`,
 * and this table is the one place an `op` is named.
 *
 * host → shard
 *   entry         { key, className, id, fresh, entry }  run a mailbox entry (call, alarm, event, close) on the shard's instance
 *   reply         { rid, ok, value | error }             the answer to an rpc
 *   done          { cid, code, message }                 a write or closeFile has committed ('' code) or failed
 *   callReply     { cid, ok, value | error }             the answer to a call made on the shard
 *   ping          { n }                                  heartbeat, while work is in flight
 * shard → host
 *   ready         { classes }                            booted; the classes it serves
 *   pong          { n }
 *   ran           { key }                                an entry finished (its result, if any, went as 'result')
 *   result        { key, cid, ok, value | error }        a call's outcome
 *   failed        { key, error }                         the worker failed (start() threw, its class is missing)
 *   closed        { key, ok, existed | error }           a close entry finished
 *   rpc           { rid, key, method, args }             storage for a worker (key) or the alarm index (key null)
 *   write         { key, cid, changes, trace }           commit a worker's writes, through the host's commit threads
 *                                                        (trace: the traced call it is attributed to, if any)
 *   closeFile     { key, cid }                           close a worker's file
 *   call          { cid, className, id, method, args, frame }  a call from a worker on the shard to any worker
 *                                                        (frame.trace: the traced call it is made from, if any;
 *                                                        frame.deadline: its caller's, runtime/deadline.js)
 *   wake          { className, at }                      the shard's scheduler wants the host's alarm scheduler at `at`
 *   alarmFailed   { error, info }
 *   reset         { info }                               a worker was reset (info.error serialized)
 *   alarmRan      { className, id, name, scheduledTime, attempt, lateMs, durationMs, error? }  an alarm handler ran (metrics, channels)
 *   socketAccept, socketSend, socketClose, socketAttach, socketAuto   a hibernating socket's operations (sockets/websockets.js)
 *   socketBroadcast { key, sids, data }                  one message to many sockets, gated on the shard
 */
const OP = Object.freeze({
  entry: 'entry',
  reply: 'reply',
  done: 'done',
  callReply: 'callReply',
  ping: 'ping',
  ready: 'ready',
  pong: 'pong',
  ran: 'ran',
  result: 'result',
  failed: 'failed',
  closed: 'closed',
  rpc: 'rpc',
  write: 'write',
  closeFile: 'closeFile',
  call: 'call',
  wake: 'wake',
  alarmFailed: 'alarmFailed',
  alarmRan: 'alarmRan',
  reset: 'reset',
  socketAccept: 'socketAccept',
  socketSend: 'socketSend',
  socketClose: 'socketClose',
  socketAttach: 'socketAttach',
  socketAuto: 'socketAuto',
  socketBroadcast: 'socketBroadcast',
});

/**
 * The shard a worker lives on: the same for a class and id every time, so one
 * file is only ever written from one shard. FNV-1a over the key's UTF-16 units.
 * @param {string} key class name and id
 * @param {number} count shards
 */
function shardOf(key, count) {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    h ^= key.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h % count;
}

/** A Uint8Array that crossed a thread (structured clones drop Buffer's prototype), as a Buffer again, without a copy. */
function buf(u8) {
  return Buffer.isBuffer(u8) ? u8 : Buffer.from(u8.buffer, u8.byteOffset, u8.byteLength);
}

/** How a WebSocket is named in a message: its number on the host, and what a shard mirrors of it. */
const SOCKET = '__durableWorkersSocket';

function isSocketMarker(v) {
  return v !== null && typeof v === 'object' && Object.hasOwn(v, SOCKET);
}

module.exports = { OP, serializeError, deserializeError, shardOf, SOCKET, isSocketMarker, buf };
