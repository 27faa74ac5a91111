'use strict';
// The base class users extend. Instances are made by the host, never by `new`
// in user code: the host hands over the id, the state and the context through
// `construct`, so they exist before any field initializer of a subclass runs.
const { DurableError, codes } = require('./errors');

/** Hooks the host calls; never reachable through a stub. */
const HOOKS = new Set(['constructor', 'start', 'stop', 'alarm', 'webSocketMessage', 'webSocketClose', 'webSocketError']);

let handover = null;

class DurableWorker {
  constructor() {
    const init = handover;
    handover = null;
    if (init === null) {
      throw new DurableError(codes.METHOD, `${new.target.name} is a durable worker: it is created by its host, not with new. Use host.get(${new.target.name}, id).`);
    }
    Object.defineProperty(this, 'id', { value: init.id, enumerable: true });
    Object.defineProperty(this, 'state', { value: init.state });
    Object.defineProperty(this, 'ctx', { value: init.ctx });
  }
}

/** Makes an instance of `Class` with its id, state and context in place. */
function construct(Class, init) {
  handover = init;
  try {
    return new Class();
  } finally {
    handover = null;
  }
}

/** The names a stub may call: methods below DurableWorker, hooks excluded. */
function callableMethods(Class) {
  const names = new Set();
  for (let proto = Class.prototype; proto && proto !== DurableWorker.prototype; proto = Object.getPrototypeOf(proto)) {
    for (const name of Object.getOwnPropertyNames(proto)) {
      if (HOOKS.has(name) || names.has(name)) continue;
      const d = Object.getOwnPropertyDescriptor(proto, name);
      if (d && typeof d.value === 'function') names.add(name);
    }
  }
  return names;
}

module.exports = { DurableWorker, construct, callableMethods };
