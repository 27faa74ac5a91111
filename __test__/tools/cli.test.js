'use strict';
// The `inspect` and `shop` commands as a user runs them: through the bin, in
// a child process, piped (so no progress bar and no escape codes), with the
// exit codes their --help promises. One test drives `shop` in process with
// terminal-like streams to see the bar drawn and then cleared.
const test = require('ava');
const fs = require('node:fs');
const path = require('node:path');
const { spawn, spawnSync } = require('node:child_process');
const { Writable } = require('node:stream');
const { open, DurableWorker } = require('durable-workers');
const { tmpDir } = require('../helpers/tmp');

const BIN = path.join(__dirname, '..', '..', 'bin', 'durable-workers.js');
const cli = (...args) => spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', timeout: 120_000 });

/** Sets the unnamed alarm `minutes` from now. */
class Reminder extends DurableWorker {
  async remindIn(minutes) {
    await this.state.setAlarm(Date.now() + minutes * 60_000);
  }

  alarm() {}
}

class Note extends DurableWorker {
  async write(text) {
    this.state.set('text', text);
  }
}

/** A directory with 3 Reminders (alarms in 5, 10 and 90 minutes) and 2 Notes, closed. */
async function populated(t) {
  const dir = path.join(tmpDir(t), 'data');
  const host = await open({ dir });
  for (const [id, minutes] of [
    ['r1', 5],
    ['r2', 10],
    ['r3', 90],
  ])
    await host.get(Reminder, id).remindIn(minutes);
  for (const id of ['n1', 'n2']) await host.get(Note, id).write('hello');
  await host.close();
  return dir;
}

test('inspect prints classes, worker counts, bytes in human units, the registry and the earliest alarms with due times', async (t) => {
  const dir = await populated(t);
  const r = cli('inspect', dir, '--alarms', '2');
  t.is(r.status, 0, r.stderr);
  t.regex(r.stdout, /^\s+Note\s+2\s+2\s+\d+(\.\d)? KiB$/m);
  t.regex(r.stdout, /^\s+Reminder\s+3\s+3\s+\d+(\.\d)? KiB$/m);
  t.regex(r.stdout, /^\s+total\s+5\s+5\s/m);
  t.regex(r.stdout, /registry\s+\d+(\.\d)? KiB/);
  t.regex(r.stdout, /pending alarms: 3/);
  // The two earliest, in order, with ISO times and how far off they are.
  t.regex(r.stdout, /\d{4}-\d\d-\d\dT[\d:.]+Z\s+in [45]m\s+Reminder "r1"\n.*in (9|10)m\s+Reminder "r2"/);
  t.notRegex(r.stdout, /"r3"/);
  t.regex(r.stdout, /and 1 more/);
  t.false(r.stdout.includes('\x1b'), 'no escape codes when piped');
});

test('inspect --json gives numbers for scripts: totals, bytes, alarms as epoch ms and ISO', async (t) => {
  const dir = await populated(t);
  const r = cli('inspect', dir, '--json');
  t.is(r.status, 0, r.stderr);
  const s = JSON.parse(r.stdout);
  t.is(s.dir, dir);
  t.is(s.workers, 5);
  t.deepEqual(
    s.classes.map((c) => [c.name, c.workers, c.files]),
    [
      ['Note', 2, 2],
      ['Reminder', 3, 3],
    ],
  );
  t.true(s.classes.every((c) => c.bytes > 0));
  t.is(s.bytes, s.registryBytes + s.classes.reduce((n, c) => n + c.bytes, 0));
  t.is(s.alarms.count, 3);
  t.deepEqual(
    s.alarms.next.map((a) => a.id),
    ['r1', 'r2', 'r3'],
  );
  for (const a of s.alarms.next) t.is(a.due, new Date(a.at).toISOString());
});

// With a control socket, inspect asks the owner instead (control/live.test.js).
test('inspect refuses with exit 3 while another process owns the directory and serves no control socket, and reads it once that process is gone', async (t) => {
  const dir = await populated(t);
  const holder = spawn(process.execPath, [path.join(__dirname, '..', 'fixtures', 'hold.js'), dir, 'x', 'no-control'], { stdio: ['ignore', 'pipe', 'inherit'] });
  t.teardown(() => holder.kill('SIGKILL'));
  await new Promise((resolve, reject) => {
    holder.stdout.on('data', (d) => String(d).includes('ready') && resolve());
    holder.once('exit', (code) => reject(new Error(`the holder exited with ${code}`)));
  });

  const refused = cli('inspect', dir);
  t.is(refused.status, 3);
  t.is(refused.stdout, '');
  t.regex(refused.stderr, /a process owns .* \(ERR_DURABLE_LOCKED\)/);
  t.regex(refused.stderr, /once that process has closed the directory/);

  holder.kill('SIGKILL');
  await new Promise((resolve) => holder.once('exit', resolve));
  const read = cli('inspect', dir, '--json');
  t.is(read.status, 0, read.stderr);
  t.is(JSON.parse(read.stdout).workers, 6, 'the holder wrote a Box');
});

test('inspect: exit 4 for what is not a durable directory, 2 for a usage error', async (t) => {
  const dir = tmpDir(t);
  const missing = cli('inspect', path.join(dir, 'nope'));
  t.is(missing.status, 4);
  t.regex(missing.stderr, /does not exist/);

  const plain = cli('inspect', dir);
  t.is(plain.status, 4);
  t.regex(plain.stderr, /not a durable directory \(it has no _registry\.db/);
  t.deepEqual(fs.readdirSync(dir), [], 'nothing was created in it');

  t.is(cli('inspect').status, 2);
  const bad = cli('inspect', dir, '--alarms', '1.5');
  t.is(bad.status, 2);
  t.regex(bad.stderr, /--alarms must be a whole number/);

  const help = cli('inspect', '--help');
  t.is(help.status, 0);
  t.regex(help.stdout, /exit codes:[\s\S]*3 {2}a process owns the directory[\s\S]*4 {2}<dir> is not a durable directory/);
});

test('shop --json runs the shop example and prints its figures, every acknowledged order verified on disk', (t) => {
  const r = cli('shop', '--customers', '3', '--journeys', '12', '--json');
  t.is(r.status, 0, r.stderr);
  t.is(r.stderr, '');
  const f = JSON.parse(r.stdout);
  t.is(f.customers, 3);
  t.is(f.journeys, 12);
  t.is(f.callsPerJourney, 6);
  t.true(f.journeysPerSec > 0 && f.callsPerSec > 0);
  t.true(f.latencyMs.p50 > 0 && f.latencyMs.p99 >= f.latencyMs.p50);
  t.true(f.commits >= 12 * 4, 'four writes a journey');
  t.deepEqual([f.verified.orders, f.verified.customers], [12, 3]);
});

test('shop prints the figures of `npm run shop`, without a bar or escape codes when piped, and keeps --dir for inspect', (t) => {
  const dir = path.join(tmpDir(t), 'shop');
  const r = cli('shop', '--customers', '2', '--journeys', '6', '--dir', dir);
  t.is(r.status, 0, r.stderr);
  for (const label of ['journeys', 'journeys/s', 'latency p50 / p99', 'calls/s', 'commits', 'syncs', 'commits per journey']) {
    t.regex(r.stdout, new RegExp(`^  ${label.replace('/', '\\/')} +\\S`, 'm'), label);
  }
  t.regex(r.stdout, /verified: 6 orders on disk, one for every acknowledged checkout of 2 customers/);
  t.false(r.stdout.includes('\x1b') || r.stderr.includes('\x1b'), 'no escape codes when piped');

  const i = cli('inspect', dir, '--json');
  t.is(i.status, 0, i.stderr);
  t.is(JSON.parse(i.stdout).classes.find((c) => c.name === 'Cart').workers, 2);

  const again = cli('shop', '--dir', dir);
  t.is(again.status, 2, 'a directory with data in it is refused, not emptied');
  t.regex(again.stderr, /not an empty directory/);
});

test('shop draws a cli-progress bar on a terminal and clears it before the figures', async (t) => {
  const { main } = require('../../js/cli');
  const tty = () => {
    const chunks = [];
    const s = new Writable({
      write(c, _e, cb) {
        chunks.push(String(c));
        cb();
      },
    });
    return Object.assign(s, { isTTY: true, columns: 100, text: () => chunks.join('') });
  };
  const [stdout, stderr] = [tty(), tty()];
  // TERM=dumb (some CI shells) turns the bar off; this test is about a real terminal.
  const term = process.env.TERM;
  process.env.TERM = 'xterm';
  t.teardown(() => (term === undefined ? delete process.env.TERM : (process.env.TERM = term)));
  const code = await main(['shop', '--customers', '2', '--seconds', '0.6'], { stdout, stderr });
  t.is(code, 0, stderr.text());
  t.regex(stderr.text(), /\d+% \| [\d.]+ s \| [\d,]+ journeys/);
  t.regex(stderr.text(), /100% \|/);
  t.regex(stdout.text(), /verified: [\d,]+ orders on disk/);
  t.false(stdout.text().includes('\x1b'), 'the bar stays on stderr');
});

test('build-addon: exit 2 for an argument, exit 1 saying where to get Rust when cargo is not on PATH (nothing written)', (t) => {
  const usage = cli('build-addon', 'extra');
  t.is(usage.status, 2);
  t.regex(usage.stderr, /build-addon takes no arguments/);
  const native = path.join(__dirname, '..', '..', 'native');
  const before = fs.existsSync(native) ? fs.readdirSync(native).sort() : [];
  // PATH holds only node's own folder: no cargo.
  const noCargo = spawnSync(process.execPath, [BIN, 'build-addon'], { encoding: 'utf8', env: { ...process.env, PATH: path.dirname(process.execPath) } });
  t.is(noCargo.status, 1);
  t.regex(noCargo.stderr, /cargo was not found on PATH; install Rust 1\.88 or newer from https:\/\/rustup\.rs/);
  t.deepEqual(fs.existsSync(native) ? fs.readdirSync(native).sort() : [], before);
});
