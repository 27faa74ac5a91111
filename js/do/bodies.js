'use strict';
// Response bodies an object returned that may still be streaming (a server-
// sent event stream, a large download): the object stays in memory until
// each has ended, as workerd keeps an object while a response body it
// returned is being read. Evicted meanwhile, the next event would start a
// second instance while the first still fed the stream.
//
// The HTTP front says when it has read a body to its end or its client has
// left (`ended`); a body read anywhere else (a Worker that awaits
// `res.text()`, a test) is found ended when its object is next looked at
// for eviction (`endIfDone`), or lets the object go once it is garbage
// collected. Wrapping each body in a stream of our own to see its end cost
// a response 14 µs (docs/internals.md).

/** The release of each held body. */
const { isReadable } = require('node:stream');

const releases = new WeakMap();
const collected = new FinalizationRegistry((release) => release());

/**
 * Calls `onEnd` once `body` has ended (or been collected).
 * @param {ReadableStream} body
 * @param {() => void} onEnd
 */
function holdUntilEnded(body, onEnd) {
  let held = true;
  const release = () => {
    if (!held) return;
    held = false;
    onEnd();
  };
  releases.set(body, release);
  collected.register(body, release, release);
}

/**
 * `body` was read to its end, or its reader gave up on it.
 * @param {ReadableStream} body
 */
function ended(body) {
  const release = releases.get(body);
  if (release === undefined) return;
  releases.delete(body);
  collected.unregister(release);
  release();
}

/**
 * Releases `body` if it has ended, been cancelled or failed; nothing for a
 * body already collected (undefined), which the registry releases.
 * @param {ReadableStream | undefined} body
 */
function endIfDone(body) {
  if (body !== undefined && !isReadable(body)) ended(body);
}

module.exports = { holdUntilEnded, ended, endIfDone };
