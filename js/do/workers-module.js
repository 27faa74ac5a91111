'use strict';
// What an app imports from 'cloudflare:workers' when it runs on this host.

/** The base of a Durable Object class: `this.ctx` and `this.env`. */
class DurableObject {
  /**
   * @param {object} ctx the object's DurableObjectState
   * @param {object} env the bindings
   */
  constructor(ctx, env) {
    this.ctx = ctx;
    this.env = env;
  }
}

/** The base of a Worker entrypoint class: `this.ctx` and `this.env`. */
class WorkerEntrypoint {
  constructor(ctx, env) {
    this.ctx = ctx;
    this.env = env;
  }
}

const { RpcTarget } = require('./rpc');

/** The bindings of the app being served (filled in by the host). */
const env = {};

const { WebSocketRequestResponsePair } = require('./hibernation');

module.exports = { DurableObject, WorkerEntrypoint, RpcTarget, WebSocketRequestResponsePair, env };
