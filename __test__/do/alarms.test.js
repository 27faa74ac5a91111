'use strict';
// Durable Object alarms on this host (plan §2.7, §5.8): when alarm() runs,
// with what, the deferred delete, retries, and alarms that outlive a host.
const test = require('ava');
const { tmpDir } = require('../helpers/tmp');
const { openObjects } = require('../../js/do/host');
const { DurableObject } = require('../../js/do/workers-module');

class Alarmed extends DurableObject {
  /** Runs `fn`'s source against this object: the test's way in. */
  async run(source, ...args) {
    const fn = new Function('ctx', 'storage', '...args', `return (async () => { ${source} })()`);
    return fn(this.ctx, this.ctx.storage, ...args);
  }

  /** Logs each call in `env.LOG` (instances do not outlive a host); `plan` in storage says what else to do. */
  async alarm(info) {
    const storage = this.ctx.storage;
    this.env.LOG.push({ ...info, name: this.ctx.id.name, during: await storage.getAlarm(), t: Date.now() });
    const plan = await storage.get('plan');
    if (plan === 'throw') throw new Error('alarm failed');
    if (plan === 'reset') await storage.setAlarm(Date.now() + 60_000);
  }
}

async function open(t, o = {}) {
  const dir = o.dir ?? tmpDir(t);
  const log = o.log ?? [];
  const h = await openObjects({ dir, name: 'test', bindings: { ALARMED: { class: Alarmed } }, vars: { LOG: log }, alarmRetryMs: o.retryMs });
  t.teardown(() => h.close().catch(() => {}));
  return { ...h, dir, log, obj: (name = 'a') => h.env.ALARMED.getByName(name) };
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits until `log` has `n` entries (fails after `ms`). */
async function until(t, log, n, ms = 5000) {
  const end = Date.now() + ms;
  while (log.length < n && Date.now() < end) await sleep(10);
  t.true(log.length >= n, `${n} alarm() calls within ${ms} ms (got ${log.length})`);
}

/**
 * Sets an alarm on object `name` a moment ahead, runs `more` on the host, and
 * closes it with the alarm still pending (`log`: what that host's alarm() calls logged). A host that fired it first (a
 * loaded machine took longer than the margin) is tried again with twice the
 * margin: the test is about the host that opens next.
 */
async function pendingAtClose(t, name, more = async () => {}) {
  for (let margin = 400; margin <= 6400; margin *= 2) {
    const first = await open(t);
    const at = await first.obj(name).run(`const at = Date.now() + ${margin}; await storage.setAlarm(at); return at;`);
    await more(first);
    await first.close();
    if (first.log.length === 0) return { dir: first.dir, at, log: first.log };
    t.log(`the alarm fired before the host closed (${margin} ms ahead); again with ${margin * 2} ms`);
  }
  throw new Error('the host never closed within 6.4 s of setting an alarm');
}

test('an alarm set 50 ms ahead fires once, with { retryCount: 0, isRetry: false } and ctx.id.name, and is then deleted', async (t) => {
  const h = await open(t);
  const at = await h.obj('first').run('const at = Date.now() + 50; await storage.setAlarm(at); return at;');
  await until(t, h.log, 1);
  await sleep(150);
  t.is(h.log.length, 1, 'fired once');
  const [e] = h.log;
  t.like(e, { scheduledTime: at, retryCount: 0, isRetry: false, name: 'first' });
  t.true(e.t >= at, `not early (${e.t - at} ms)`);
  t.is(await h.obj('first').run('return storage.getAlarm();'), null);
});

test('an alarm set in the past is clamped to now and fires at once', async (t) => {
  const h = await open(t);
  const before = Date.now();
  const at = await h.obj().run('await storage.setAlarm(1000); return storage.getAlarm();');
  t.true(at >= before && at <= Date.now(), 'clamped to now');
  await until(t, h.log, 1, 1000);
  t.is(h.log[0].scheduledTime, at);
  t.true(h.log[0].t - before < 1000);
});

test('deferred delete: inside alarm() getAlarm() is null; an alarm set again there is kept', async (t) => {
  const h = await open(t);
  await h.obj('keep').run(`await storage.put('plan', 'reset'); await storage.setAlarm(Date.now());`);
  await h.obj('drop').run(`await storage.setAlarm(Date.now());`);
  await until(t, h.log, 2);
  t.deepEqual(
    h.log.map((e) => e.during),
    [null, null],
  );
  const kept = h.log.find((e) => e.name === 'keep');
  const next = await h.obj('keep').run('return storage.getAlarm();');
  t.true(next >= kept.t + 59_000, 'the alarm set inside alarm() is kept');
  t.is(await h.obj('drop').run('return storage.getAlarm();'), null);
  await sleep(100);
  t.is(h.log.length, 2);
});

test('a throwing alarm() is retried with retryCount 1, 2, … after a doubling delay, and given up (deleted) after 6 retries', async (t) => {
  const base = 20;
  const h = await open(t, { retryMs: base });
  await h.obj('fails').run(`await storage.put('plan', 'throw'); await storage.setAlarm(Date.now());`);
  await until(t, h.log, 7, 10_000);
  // The last retry's delay was 20 << 5 = 640 ms: a seventh would come after 1280 ms.
  await sleep(1500);
  t.deepEqual(
    h.log.map((e) => [e.retryCount, e.isRetry]),
    [
      [0, false],
      [1, true],
      [2, true],
      [3, true],
      [4, true],
      [5, true],
      [6, true],
    ],
  );
  for (let i = 1; i < h.log.length; i++) {
    const gap = h.log[i].t - h.log[i - 1].t;
    const delay = base * 2 ** (i - 1);
    t.true(gap >= delay - 2 && gap < delay * 1.25 + 500, `retry ${i} after ${gap} ms (delay ${delay} ms + ≤ 25 %)`);
  }
  t.is(await h.obj('fails').run('return storage.getAlarm();'), null, 'deleted after the last retry');
});

test('an alarm whose time passed while the host was closed fires after reopening, with the name', async (t) => {
  const { dir, at, log } = await pendingAtClose(t, 'sleeper');
  await sleep(at - Date.now() + 100);
  t.is(log.length, 0, 'a closed host fires nothing');
  const again = await open(t, { dir });
  await until(t, again.log, 1);
  t.like(again.log[0], { scheduledTime: at, retryCount: 0, isRetry: false, name: 'sleeper' });
  t.is(await again.obj('sleeper').run('return storage.getAlarm();'), null);
});

test('an alarm pending at close fires at its time after reopening', async (t) => {
  const { dir, at } = await pendingAtClose(t, 'later');
  const again = await open(t, { dir });
  await until(t, again.log, 1);
  t.like(again.log[0], { scheduledTime: at, name: 'later' });
  t.true(again.log[0].t >= at, 'not early');
});

test('a lost catalog is rebuilt from the files with the objects’ alarms: one fires at its time, its object never called', async (t) => {
  const fs = require('node:fs');
  const path = require('node:path');
  const { dir, at } = await pendingAtClose(t, 'orphan', (first) => first.obj('plain').run(`await storage.put('k', 1);`));
  for (const f of fs.readdirSync(dir)) if (f.startsWith('_registry.db')) fs.rmSync(path.join(dir, f));
  const again = await open(t, { dir });
  await until(t, again.log, 1);
  t.like(again.log[0], { scheduledTime: at, retryCount: 0, name: 'orphan' });
  t.is(again.log.length, 1);
});

test('an alarm deleted before its time never fires, nor after reopening', async (t) => {
  const h = await open(t);
  await h.obj().run('await storage.setAlarm(Date.now() + 100);');
  await h.obj().run('await storage.deleteAlarm();');
  await sleep(300);
  t.is(h.log.length, 0);
  await h.close();
  await open(t, { dir: h.dir, log: h.log });
  await sleep(200);
  t.is(h.log.length, 0);
});

test('setAlarm refuses a time <= 0 and what is not a number or a Date', async (t) => {
  const h = await open(t);
  const got = await h.obj().run(`
    const out = [];
    for (const v of [0, -5, new Date(0), 'abc', undefined]) {
      try { await storage.setAlarm(v); out.push('set'); } catch (err) { out.push(err.message); }
    }
    return out;
  `);
  t.deepEqual(got, [
    'setAlarm() cannot be called with an alarm time <= 0',
    'setAlarm() cannot be called with an alarm time <= 0',
    'setAlarm() cannot be called with an alarm time <= 0',
    "Failed to execute 'setAlarm' on 'DurableObjectStorage': parameter 1 is not of type 'date'.",
    "Failed to execute 'setAlarm' on 'DurableObjectStorage': parameter 1 is not of type 'date'.",
  ]);
});

test('the alarm timer is unref’d: a host with an alarm pending does not keep the process alive', async (t) => {
  const { execFile } = require('node:child_process');
  const script = `
    const { openObjects } = require(${JSON.stringify(require.resolve('../../js/do/host'))});
    class Later { constructor(ctx) { this.ctx = ctx; } async set() { await this.ctx.storage.setAlarm(Date.now() + 3600000); } async alarm() {} }
    openObjects({ dir: process.argv[1], name: 'test', bindings: { L: { class: Later } } })
      .then((h) => h.env.L.getByName('x').set())
      .then(() => console.log('set'));
  `;
  const out = await new Promise((resolve, reject) => {
    execFile(process.execPath, ['-e', script, tmpDir(t)], { timeout: 20_000 }, (err, stdout) => (err ? reject(err) : resolve(stdout)));
  });
  t.is(out.trim(), 'set', 'exited by itself, with the alarm set');
});

test('a commit that sets an alarm is written only after the alarm index: SIGKILL while the index write hangs leaves neither', async (t) => {
  const { execFile } = require('node:child_process');
  const dir = tmpDir(t);
  // The child's index writes that move an alarm earlier never finish; the
  // object's turn (an alarm and a value) must then never reach its file,
  // which a SIGKILL would otherwise leave there (the log is in the page cache).
  const script = `
    const { ObjectAlarms } = require(${JSON.stringify(require.resolve('../../js/do/alarms'))});
    const { openObjects } = require(${JSON.stringify(require.resolve('../../js/do/host'))});
    const earlier = ObjectAlarms.prototype.earlier;
    ObjectAlarms.prototype.earlier = function (cls, hex, at, byApp = true) {
      return byApp && process.argv[2] === 'hang' ? new Promise(() => {}) : earlier.call(this, cls, hex, at, byApp);
    };
    class Alarmed { constructor(ctx) { this.ctx = ctx; } async set() { this.ctx.storage.setAlarm(Date.now() + 3600000); this.ctx.storage.kv.put('k', 1); } async alarm() {} }
    openObjects({ dir: process.argv[1], name: 'test', bindings: { ALARMED: { class: Alarmed } } }).then((h) => {
      h.env.ALARMED.getByName('a').set().then(() => console.log('acknowledged'));
      setTimeout(() => process.kill(process.pid, 'SIGKILL'), 300);
    });
  `;
  const run = (mode) =>
    new Promise((resolve) => {
      execFile(process.execPath, ['-e', script, dir, mode], { timeout: 20_000 }, (err, stdout) => resolve({ signal: err?.signal, stdout }));
    });
  const hung = await run('hang');
  t.is(hung.signal, 'SIGKILL');
  t.is(hung.stdout, '', 'nothing acknowledged');
  let h = await open(t, { dir });
  t.deepEqual(await h.obj().run(`return [await storage.getAlarm(), await storage.get('k')];`), [null, undefined], 'neither the alarm nor the value was written');
  await h.close();
  // The same with the index answering: both are written, and acknowledged.
  const answered = await run('answer');
  t.is(answered.stdout.trim(), 'acknowledged');
  h = await open(t, { dir });
  const [at, k] = await h.obj().run(`return [await storage.getAlarm(), await storage.get('k')];`);
  t.true(at > Date.now(), `alarm at ${at}`);
  t.is(k, 1);
});
