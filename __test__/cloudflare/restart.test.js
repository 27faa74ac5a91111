'use strict';
// The restart scenarios of the two-host suite, in their own file because they
// restart the host: named alarms set before a crash fire after it, without
// anything touching the worker meanwhile; a failing alarm is retried; state
// written before the crash is there after it. Plus the command line.
const test = require('ava');
const path = require('node:path');
const fs = require('node:fs');
const os = require('node:os');
const { spawn } = require('node:child_process');
const { nodeHost, workerdHost, sleep, FIXTURE } = require('../helpers/workerd-hosts');
const { freePort } = require('../../js/cloudflare');

for (const [name, make] of Object.entries({ node: nodeHost, workerd: workerdHost })) {
  test(`${name}: named alarms set before a restart (workerd: SIGKILL; Node: close and reopen) fire after it, in order, once each; a failing one is retried with retryCount 1`, async (t) => {
    t.timeout(60_000);
    const h = await make();
    t.teardown(() => h.close());
    await h.call('Box', 'survivor', 'put', 'k', new Map([['when', new Date(42)]]));
    const times = await h.call('Clock', 'c', 'arm', ['a', 'b', ''], 1500);
    t.true(times.every((x) => typeof x === 'number'));
    await h.call('Clock', 'c', 'armFlaky', 300);
    await h.restart({ crash: true });
    t.deepEqual(await h.call('Box', 'survivor', 'get', 'k'), new Map([['when', new Date(42)]]), 'state written before the crash');
    // Left untouched until well past the due times: the platform fires them, not our polling.
    await sleep(3000);
    let fired = [];
    for (let i = 0; i < 100 && fired.length < 5; i++) {
      fired = await h.call('Clock', 'c', 'fired');
      if (fired.length < 5) await sleep(100);
    }
    // Order per name only: how flaky's retry interleaves with a, b and '' depends on when the restarted host first fires.
    const flaky = fired.filter((f) => f.name === 'flaky');
    const named = fired.filter((f) => f.name !== 'flaky');
    t.is(fired.length, 5, JSON.stringify(fired.map((f) => [f.name, f.retryCount])));
    t.deepEqual(
      flaky.map((f) => f.retryCount),
      [0, 1],
      'flaky fails once, then its retry',
    );
    t.deepEqual(
      named.map((f) => [f.name, f.retryCount]),
      [
        ['a', 0],
        ['b', 0],
        ['', 0],
      ],
      'a, b, then the empty name, once each',
    );
    named.forEach((f, i) => {
      t.is(f.scheduledTime, times[i]);
      t.true(f.at >= f.scheduledTime, 'never early');
    });
    t.true(
      fired.every((f) => f.readsCleared),
      'inside alarm() the firing one reads as cleared',
    );
    const [first, retry] = flaky;
    t.is(retry.scheduledTime, first.scheduledTime, 'a retry keeps the time it was set for');
    t.true(retry.at - first.at >= 900, `retried after the 1 s backoff (${retry.at - first.at} ms)`);
    t.deepEqual(await h.call('Clock', 'c', 'pending', ['a', 'b', '', 'flaky']), [null, null, null, null]);
  });
}

test('workerd: when start() throws as the alarm wakes the object, the named alarms are retried with the backoff until it succeeds, and then fire', async (t) => {
  t.timeout(60_000);
  const h = await workerdHost();
  t.teardown(() => h.close());
  await h.call('Moody', 'm', 'arm', 2, 1000);
  await h.restart({ crash: true });
  // Untouched meanwhile: a call would run start() too. Fails at ~1 s, retried ~1 s and ~2 s later.
  await sleep(7000);
  const { failedAt, fired } = await h.call('Moody', 'm', 'report');
  t.is(failedAt.length, 2, 'start() failed twice');
  t.true(failedAt[1] - failedAt[0] >= 900, `the retry waited the 1 s backoff (${failedAt[1] - failedAt[0]} ms)`);
  t.is(fired?.name, 'm', 'the named alarm fired once start() succeeded');
  t.true(fired.at - failedAt[1] >= 1900, `after the 2 s backoff (${fired.at - failedAt[1]} ms)`);
});

test('durable-workers workerd <module> serves the module’s fetch handler, keeps SQLite files under --dir, and exits 0 on SIGTERM', async (t) => {
  t.timeout(60_000);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dw-95-cli-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const port = await freePort();
  const child = spawn(process.execPath, [path.join(__dirname, '..', '..', 'bin', 'durable-workers.js'), 'workerd', FIXTURE, '--port', String(port), '--dir', dir], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (b) => (out += b));
  child.stderr.on('data', (b) => (out += b));
  const exited = new Promise((r) => child.on('exit', (code) => r(code)));
  t.teardown(() => child.kill('SIGKILL'));
  for (let i = 0; i < 200 && !out.includes('listening on'); i++) await sleep(50);
  t.regex(out, /workerd 1\.20261117\.1: Box, Clock, Inventory, Moody, Order, Peer, Relay, Room, Shop/);
  t.is(await (await fetch(`http://127.0.0.1:${port}/`)).text(), 'ok');
  const { wire } = require('../../js/cloudflare');
  const r = wire.decode(await (await fetch(`http://127.0.0.1:${port}/call`, { method: 'POST', body: wire.encode({ class: 'Box', id: 'cli', method: 'put', args: ['k', 1n] }) })).text());
  t.deepEqual(r, { ok: true, value: 1n });
  const files = fs.readdirSync(path.join(dir, 'data'), { recursive: true }).map(String);
  t.true(
    files.some((f) => f.startsWith('durable-workers:Box') && f.endsWith('.sqlite')),
    files.join(', '),
  );
  t.true(fs.readFileSync(path.join(dir, 'build', 'config.capnp'), 'utf8').includes('enableSql = true'));
  child.kill('SIGTERM');
  t.is(await exited, 0);
  t.regex(out, /workerd stopped/);
});

test('durable-workers workerd: a SIGTERM while workerd is still starting stops it too, and exits 0', async (t) => {
  t.timeout(60_000);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dw-95-cli-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const port = await freePort();
  const child = spawn(process.execPath, [path.join(__dirname, '..', '..', 'bin', 'durable-workers.js'), 'workerd', FIXTURE, '--port', String(port), '--dir', dir], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const exited = new Promise((r) => child.on('exit', (code, signal) => r(code ?? signal)));
  t.teardown(() => child.kill('SIGKILL'));
  let signalled = false;
  const onData = (b) => {
    out += b;
    // The classes line is written after the build, before workerd answers.
    if (!signalled && out.includes('workerd 1.')) {
      signalled = true;
      child.kill('SIGTERM');
    }
  };
  child.stdout.on('data', onData);
  child.stderr.on('data', onData);
  t.is(await exited, 0, out);
  t.regex(out, /workerd stopped/);
  const answered = await fetch(`http://127.0.0.1:${port}/`, { signal: AbortSignal.timeout(2000) }).then(
    () => true,
    () => false,
  );
  t.false(answered, 'no workerd left behind');
});
