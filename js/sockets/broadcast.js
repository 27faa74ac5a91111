'use strict';
// Sends that wait for the owner's writes: one socket's (`send`) or many at
// once (`ctx.broadcast`). Each socket's messages leave in the order they were
// made, and none leaves before the commit carrying the writes made before it
// has landed; a broadcast waits for that commit once, not once per socket.
// Shared by the host's registry (./websockets.js) and a shard's mirror
// (../shards/context.js); the option checks by the Cloudflare mapping too, so
// no Node builtins.
const { DurableError, codes } = require('../api/errors');

/**
 * Delivers to `targets` once `gate` has resolved and each target's earlier
 * sends have left; `deliver(targets)` runs once. If the commit fails, nothing
 * is sent: what it would have announced never happened.
 * @param {{ chain: Promise<void> | null }[]} targets socket records; `chain` is a record's last pending send
 * @param {Promise<void> | null} gate the owning worker's flush
 * @param {(targets: object[]) => void} deliver
 */
function sendInOrder(targets, gate, deliver) {
  let pending = null;
  for (const r of targets) if (r.chain !== null) (pending ??= []).push(r.chain);
  if (gate === null && pending === null) {
    deliver(targets);
    return;
  }
  const after = pending === null ? gate : Promise.all(gate === null ? pending : [...pending, gate]);
  const chain = after.then(
    () => deliver(targets),
    () => {},
  );
  for (const r of targets) r.chain = chain;
  chain.then(() => {
    for (const r of targets) if (r.chain === chain) r.chain = null;
  });
}

/**
 * `ctx.broadcast(message, { tags, except })`'s arguments, checked.
 * @returns {{ tags: string[] | null, except: Set<object> }}
 */
function broadcastOptions(who, message, options) {
  if (typeof message !== 'string' && !(message instanceof ArrayBuffer) && !ArrayBuffer.isView(message)) {
    throw new TypeError(`${who}: broadcast(message) takes a string, an ArrayBuffer or a typed array (a Buffer), got ${message === null ? 'null' : typeof message}`);
  }
  if (options === undefined) return { tags: null, except: new Set() };
  if (options === null || typeof options !== 'object') throw new TypeError(`${who}: broadcast(message, options): options must be an object { tags?, except? }`);
  for (const k of Object.keys(options)) if (k !== 'tags' && k !== 'except') throw new TypeError(`${who}: broadcast(): unknown option ${k} (the options are tags, except)`);
  const { tags, except } = options;
  if (tags !== undefined && (!Array.isArray(tags) || tags.some((t) => typeof t !== 'string'))) {
    throw new DurableError(codes.NAME, `${who}: broadcast(): tags must be an array of strings (a socket matches if it has any of them)`);
  }
  const skip = except === undefined || except === null ? [] : Array.isArray(except) ? except : [except];
  return { tags: tags ?? null, except: new Set(skip) };
}

/** Whether a socket with `tags` and `handle` is one a broadcast with `opts` reaches. */
function reaches(opts, handle, tags) {
  if (opts.except.has(handle)) return false;
  return opts.tags === null || opts.tags.some((t) => tags.includes(t));
}

module.exports = { sendInOrder, broadcastOptions, reaches };
