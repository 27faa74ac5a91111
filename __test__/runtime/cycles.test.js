'use strict';
// Calls that would wait on themselves are refused, not left to hang.
const test = require('ava');
const fs = require('node:fs');
const { AsyncLocalStorage } = require('node:async_hooks');
const { open, DurableWorker } = require('../..');
const { tmpDir } = require('../helpers/tmp');

const latches = {};
function latch(name) {
  let open;
  latches[name] = new Promise((r) => (open = r));
  return open;
}

class A extends DurableWorker {
  selfCall() {
    return this.ctx.get(A, this.id).ping();
  }
  viaB() {
    return this.ctx.get(B, 'b').callBack(this.id);
  }
  async laterCallB() {
    await latches.a;
    return this.ctx.get(B, 'b').ping();
  }
  ping() {
    return `A:${this.id}`;
  }
}

class B extends DurableWorker {
  callBack(id) {
    return this.ctx.get(A, id).ping();
  }
  async laterCallA() {
    await latches.b;
    return this.ctx.get(A, 'a').ping();
  }
  ping() {
    return 'B';
  }
}

/** Calls itself from code a call left behind: each must still carry the call's chain. */
class Later extends DurableWorker {
  self() {
    return this.ctx.get(Later, this.id).ping();
  }
  async afterAddon() {
    this.state.set('x', 1);
    await this.state.sync(); // a promise the addon resolves
    return this.self();
  }
  timer() {
    return new Promise((resolve, reject) => setTimeout(() => this.self().then(resolve, reject), 1));
  }
  ioCallback() {
    return new Promise((resolve, reject) => fs.stat(__filename, () => this.self().then(resolve, reject)));
  }
  streamEvent() {
    return new Promise((resolve, reject) => fs.createReadStream(__filename).once('data', () => this.self().then(resolve, reject)));
  }
  ping() {
    return 'pong';
  }
}

async function host(t) {
  const h = await open({ dir: tmpDir(t) });
  t.teardown(() => h.close());
  return h;
}

test('a worker calling itself is refused with ERR_DURABLE_CYCLE naming the chain', async (t) => {
  const h = await host(t);
  const err = await t.throwsAsync(h.get(A, 'a').selfCall());
  t.is(err.code, 'ERR_DURABLE_CYCLE');
  t.regex(err.message, /A "a" → A "a"/);
});

test('a call back into a worker earlier in the chain is refused, naming the chain', async (t) => {
  const h = await host(t);
  const err = await t.throwsAsync(h.get(A, 'a').viaB());
  t.is(err.code, 'ERR_DURABLE_CYCLE');
  t.regex(err.message, /A "a" → B "b" → A "a"/);
  // Nothing is stuck: both workers answer afterwards.
  t.is(await h.get(A, 'a').ping(), 'A:a');
  t.is(await h.get(B, 'b').ping(), 'B');
});

test('two requests that would wait on each other across workers: the closing call is refused and the other finishes', async (t) => {
  const h = await host(t);
  const openA = latch('a');
  const openB = latch('b');
  const r1 = h.get(A, 'a').laterCallB();
  const r2 = h.get(B, 'b').laterCallA();
  await new Promise((r) => setImmediate(r));
  openA(); // A now waits on B, which is busy with r2
  await new Promise((r) => setTimeout(r, 10));
  openB(); // B would now wait on A: a cycle no single chain shows
  const err = await t.throwsAsync(r2);
  t.is(err.code, 'ERR_DURABLE_CYCLE');
  t.regex(err.message, /B "b" → A "a" → B "b"/);
  t.is(await r1, 'B');
});

// The chain is an AsyncLocalStorage (js/runtime/call-chain.js). Node 24 builds it on
// AsyncContextFrame instead of async hooks (--no-async-context-frame or
// --experimental-async-context-frame switch it), a different mechanism for
// the same promise: the chain follows a call into whatever it leaves behind.
test('the chain follows a call through an awaited addon promise, a timer, an I/O callback and a stream event, on this line’s AsyncLocalStorage', async (t) => {
  const flags = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)];
  const major = Number(process.versions.node.split('.')[0]);
  const frames = flags.includes('--no-async-context-frame') ? false : major >= 24 || flags.includes('--experimental-async-context-frame');
  // _propagate is how the async-hooks implementation hands a store to a new resource; the frame-based one has none.
  t.is(typeof AsyncLocalStorage.prototype._propagate !== 'function', frames, `Node ${process.versions.node}: AsyncLocalStorage on ${frames ? 'AsyncContextFrame' : 'async hooks'}`);
  const h = await host(t);
  for (const method of ['afterAddon', 'timer', 'ioCallback', 'streamEvent']) {
    const err = await t.throwsAsync(h.get(Later, method)[method](), undefined, method);
    t.is(err.code, 'ERR_DURABLE_CYCLE', method);
    t.regex(err.message, new RegExp(`Later "${method}" → Later "${method}"`), method);
  }
});
