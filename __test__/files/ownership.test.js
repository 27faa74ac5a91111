'use strict';
// One process owns a durable directory: a second owner is refused, a killed
// owner frees it at once, and an owner that never closes still exits.
const test = require('ava');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { once } = require('node:events');
const { open, codes } = require('../..');
const { Log, Box } = require('../fixtures/workers');
const { tmpDir } = require('../helpers/tmp');

const FIXTURES = path.join(__dirname, '..', 'fixtures');

/** Starts a fixture program; it is SIGKILLed at teardown if still running. */
function start(t, name, args) {
  const child = spawn(process.execPath, [path.join(FIXTURES, name), ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = once(child, 'exit').then(([code, signal]) => ({ code, signal }));
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (s) => (stdout += s));
  child.stderr.setEncoding('utf8').on('data', (s) => (stderr += s));
  t.teardown(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
  });
  return {
    child,
    exited,
    stderr: () => stderr,
    /** Resolves with the first line the child prints; rejects if it exits first. */
    firstLine: () =>
      new Promise((resolve, reject) => {
        const check = () => {
          const nl = stdout.indexOf('\n');
          if (nl !== -1) {
            child.stdout.off('data', check);
            resolve(stdout.slice(0, nl));
          }
        };
        child.stdout.on('data', check);
        check();
        exited.then(({ code, signal }) => reject(new Error(`${name} exited (${code ?? signal}) before printing: ${stderr}`)));
      }),
  };
}

/** Runs try-open.js against `dir` and returns what it printed. */
async function tryOpen(t, dir) {
  const p = start(t, 'try-open.js', [dir]);
  const line = await p.firstLine();
  const { code } = await p.exited;
  t.is(code, 0, p.stderr());
  return JSON.parse(line);
}

async function openFor(t, dir) {
  const host = await open({ dir });
  t.teardown(() => host.close());
  return host;
}

test('a second process opening an owned directory is refused with ERR_DURABLE_LOCKED naming the directory, until the owner closes', async (t) => {
  t.timeout(60_000);
  const dir = tmpDir(t);
  const host = await open({ dir });
  t.teardown(() => host.close());
  await host.get(Box, 'held').put('v', 'from the owner');

  const refused = await tryOpen(t, dir);
  t.false(refused.ok);
  t.is(refused.code, codes.LOCKED);
  t.true(refused.message.includes(dir), refused.message);

  await host.close();
  const admitted = await tryOpen(t, dir);
  t.deepEqual(admitted, { ok: true, held: 'from the owner' });
});

test('a SIGKILLed owner frees its directory at once, and another process reopens it with its data intact', async (t) => {
  t.timeout(60_000);
  const dir = tmpDir(t);
  const owner = start(t, 'hold.js', [dir, 'written before the kill']);
  t.is(await owner.firstLine(), 'ready');

  // While the owner lives, the directory is refused to this process too.
  const err = await t.throwsAsync(open({ dir }));
  t.is(err.code, codes.LOCKED);

  owner.child.kill('SIGKILL');
  t.deepEqual(await owner.exited, { code: null, signal: 'SIGKILL' });

  // No retry, no wait: the lock died with the process.
  const host = await openFor(t, dir);
  t.is(await host.get(Box, 'held').read('v'), 'written before the kill');
});

test('a second open() of a directory in the same process is refused with ERR_DURABLE_LOCKED, and succeeds after close()', async (t) => {
  const dir = tmpDir(t);
  const first = await open({ dir });
  t.teardown(() => first.close());
  await first.get(Box, 'x').put('v', 1);

  const err = await t.throwsAsync(open({ dir }));
  t.is(err.code, codes.LOCKED);
  t.true(err.message.includes(dir), err.message);
  // The refusal did not disturb the owner.
  t.is(await first.get(Box, 'x').read('v'), 1);

  await first.close();
  const second = await openFor(t, dir);
  t.is(await second.get(Box, 'x').read('v'), 1);
});

test('a process that uses workers and never calls close() exits by itself, and its writes are there on reopen', async (t) => {
  t.timeout(60_000);
  const dir = tmpDir(t);
  const p = start(t, 'no-close.js', [dir]);
  t.is(await p.firstLine(), 'done');
  // Generous: it should take milliseconds. A handle left open keeps it alive.
  const timer = new Promise((resolve) => setTimeout(resolve, 20_000, 'still running after 20 s'));
  const outcome = await Promise.race([p.exited, timer]);
  t.deepEqual(outcome, { code: 0, signal: null }, p.stderr());

  const host = await openFor(t, dir);
  t.deepEqual(await host.get(Log, 'log').items(), [0, 1, 2, 3, 4]);
  for (const k of ['a', 'b', 'c']) t.is(await host.get(Box, `box-${k}`).read('k'), k);
});
