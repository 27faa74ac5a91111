'use strict';
// Calls that would wait on themselves are refused, not left to hang.
const test = require('ava');
const { open, DurableWorker } = require('..');
const { tmpDir } = require('./helpers/tmp');

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
