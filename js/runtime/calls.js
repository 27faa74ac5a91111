'use strict';
// What every call to a worker goes through on its way in, in process or from
// a shard: the worker's key, its class's name, the arguments made into what
// crosses (structured clones; a socket as its handle), and the refusals of a
// method that is not callable and of a closed host.
const { DurableError, codes } = require('../api/errors');
const { clone, isPrimitive } = require('../state/codec');
const { WebSocketHandle, isSocket } = require('../sockets/websockets');

/** A class's name on disk: its static workerName, else its name. */
function nameOf(Class) {
  return Object.hasOwn(Class, 'workerName') ? Class.workerName : Class.name;
}

/** A worker's key in the host's maps: class name and id, NUL between (no class name holds one). */
function keyOf(name, id) {
  return `${name}\u0000${id}`;
}

/**
 * Arguments cross as a structured clone; all-primitive arguments are their
 * own; a WebSocket crosses as its handle, the very socket, not a copy.
 */
function cloneArgs(args, who, method, sockets) {
  const where = () => `${who}: the arguments of ${method}() cannot be sent`;
  let sockety = false;
  let plain = true;
  for (const a of args) {
    if (a instanceof WebSocketHandle || isSocket(a)) sockety = true;
    else if (!isPrimitive(a)) plain = false;
  }
  if (!sockety) return plain ? args : clone(args, where);
  return args.map((a) => (a instanceof WebSocketHandle || isSocket(a) ? sockets.handleFor(a) : clone(a, where)));
}

/** ERR_DURABLE_METHOD: a method the class does not have, or one a stub may not call. */
function methodError(binding, who, method) {
  const why = binding.Class.prototype[method] !== undefined ? 'is not callable through a stub (lifecycle hooks and inherited methods are not)' : 'does not exist';
  return new DurableError(codes.METHOD, `${who}: ${binding.name}.${method}() ${why}`);
}

/** ERR_DURABLE_CLOSED, naming the worker. */
function closedError(who) {
  return new DurableError(codes.CLOSED, `${who}: the host is closed`);
}

module.exports = { nameOf, keyOf, cloneArgs, methodError, closedError };
