'use strict';
// `inspect` and `top` against a directory another process is serving
// (fixtures/control-owner.js: workers called in a loop, one with a queue, an
// alarm), run as a user runs them: the bin, in a process of its own; and
// `top` drawn in a real terminal (tmux), read off the screen.
const test = require('ava');
const fs = require('node:fs');
const path = require('node:path');
const { spawn, spawnSync } = require('node:child_process');
const { connect } = require('../../js/control/client');
const { tmpDir } = require('../helpers/tmp');
const { until } = require('../helpers/poll');
const { BIN, startOwner, exited, cli } = require('../helpers/control');

test('inspect asks the process serving the directory, and says the summary came from it (pid), in text and in --json', async (t) => {
  const dir = path.join(tmpDir(t), 'data');
  const owner = await startOwner(t, dir);
  await until(() => fs.existsSync(path.join(dir, 'Counter')), 10_000, 'the owner to write a Counter');

  const text = await cli(['inspect', dir, '--alarms', '3']);
  t.is(text.status, 0, text.stderr);
  t.true(text.stdout.startsWith(`${dir}\n  live: asked the process serving it (pid ${owner.pid}) over its control socket\n`), text.stdout);
  t.regex(text.stdout, /^\s+Counter\s+[1-5]\s+[0-5]\s+\d/m);
  t.regex(text.stdout, /^\s+Reminder\s+1\s+1\s/m);
  t.regex(text.stdout, /pending alarms: 1\n.*in (59m|60m|1h 0m)\s+Reminder "r1"/);

  const json = await cli(['inspect', dir, '--json']);
  t.is(json.status, 0, json.stderr);
  const s = JSON.parse(json.stdout);
  t.true(s.live);
  t.deepEqual(s.owner, { pid: owner.pid });
  t.is(s.dir, dir);
  t.deepEqual(
    s.alarms.next.map((a) => [a.class, a.id]),
    [['Reminder', 'r1']],
  );
  t.true(s.registryBytes > 0 && s.bytes > s.registryBytes);
});

test('top --json --once: calls/s above zero, the worker with a queue first among the busiest, the alarm, latency, no shards', async (t) => {
  const dir = path.join(tmpDir(t), 'data');
  const owner = await startOwner(t, dir);
  // A second between the samples: on a loaded machine the owner can go a few
  // hundred milliseconds without running, and its rates would read zero.
  const r = await cli(['top', dir, '--json', '--once', '--interval', '1000']);
  t.is(r.status, 0, r.stderr);
  const lines = r.stdout.trim().split('\n');
  t.is(lines.length, 1, 'one sample line for --once');
  const s = JSON.parse(lines[0]);
  t.is(s.pid, owner.pid);
  t.is(s.dir, dir);
  t.true(s.callsPerSecond > 0, `calls/s ${s.callsPerSecond}`);
  t.true(s.commitsPerSecond > 0, `commits/s ${s.commitsPerSecond}`);
  t.is(s.workers[0].class, 'Counter');
  t.is(s.workers[0].id, 'hot');
  t.true(s.workers[0].mailbox > 0, `hot has a queue: ${JSON.stringify(s.workers[0])}`);
  t.true(s.workers.length <= 10 && s.live >= 5);
  t.is(s.alarms.count, 1);
  t.is(s.alarms.next[0].id, 'r1');
  t.true(s.latency.p50 > 0 && s.latency.p99 >= s.latency.p50, JSON.stringify(s.latency));
  t.is(s.shards, null);
  t.true(s.stats.calls > 0);
});

test('top --json streams a line a sample; when the owner is killed it exits 1 saying the owner went away', async (t) => {
  const dir = path.join(tmpDir(t), 'data');
  const owner = await startOwner(t, dir);
  const top = spawn(process.execPath, [BIN, 'top', dir, '--json', '--interval', '150'], { stdio: ['ignore', 'pipe', 'pipe'] });
  t.teardown(() => top.kill('SIGKILL'));
  let out = '';
  let err = '';
  top.stdout.on('data', (d) => (out += d));
  top.stderr.on('data', (d) => (err += d));
  await until(
    () => out.split('\n').length > 3,
    10_000,
    () => `three lines from top --json: ${out}${err}`,
  );
  const lines = out
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  t.true(lines.every((l, i) => l.pid === owner.pid && (i === 0 || l.at > lines[i - 1].at)));
  owner.kill('SIGKILL');
  const code = await new Promise((resolve) => top.once('exit', resolve));
  t.is(code, 1);
  t.regex(err, /^durable-workers top: the process serving .*data closed the connection \(it is closing, or has exited\)\n$/);
});

test('a SIGKILLed owner leaves a stale socket nobody answers; the next owner replaces it and answers', async (t) => {
  const dir = path.join(tmpDir(t), 'data');
  const sock = path.join(dir, '.control.sock');
  const first = await startOwner(t, dir);
  first.kill('SIGKILL');
  await exited(first);
  t.true(fs.lstatSync(sock).isSocket(), 'the killed owner left its socket file');
  const none = await t.throwsAsync(connect(dir));
  t.is(none.code, 'ERR_DURABLE_CONTROL');
  t.regex(none.message, /no process serves .*data/);
  t.is(none.cause.code, 'ECONNREFUSED');

  const second = await startOwner(t, dir);
  const client = await connect(dir);
  t.teardown(() => client.close());
  const s = await client.request('summary');
  t.is(s.owner.pid, second.pid);
  t.true(fs.lstatSync(sock).isSocket());
});

test('inspect exits 3, saying why, when the owner cannot be asked (it opened the directory with { control: false })', async (t) => {
  const dir = path.join(tmpDir(t), 'data');
  await startOwner(t, dir, ['--no-control']);
  t.false(fs.existsSync(path.join(dir, '.control.sock')));
  const r = await cli(['inspect', dir]);
  t.is(r.status, 3);
  t.is(r.stdout, '');
  t.regex(r.stderr, /a process owns .* \(ERR_DURABLE_LOCKED\), and it could not be asked:\n {2}ERR_DURABLE_CONTROL: no process serves .*\{ control: false \}/);
  const top = await cli(['top', dir, '--once']);
  t.is(top.status, 1);
  t.regex(top.stderr, /no process serves/);
});

const tmuxMissing = spawnSync('tmux', ['-V']).error ? 'tmux is not installed (apt-get install tmux)' : null;
if (tmuxMissing) console.log(`control/live: skipping the terminal test: ${tmuxMissing}`);

(tmuxMissing ? test.skip : test)(
  'top in a real terminal (tmux): the header, a worker id and a calls/s figure on screen; a resize redraws to the new width; q quits and restores the screen',
  async (t) => {
    const base = tmpDir(t);
    const dir = path.join(base, 'data');
    await startOwner(t, dir);
    const server = path.join(base, 'tmux.sock');
    const tmux = (...args) => spawnSync('tmux', ['-S', server, ...args], { encoding: 'utf8' });
    t.teardown(() => tmux('kill-server'));
    const q = (s) => `'${s.replace(/'/g, `'\\''`)}'`;
    const command = `${q(process.execPath)} ${q(BIN)} top ${q(dir)} --interval 200; echo "top exited $?"; exec sleep 60`;
    const started = tmux('new-session', '-d', '-s', 'top', '-x', '120', '-y', '40', command);
    t.is(started.status, 0, started.stderr);
    const screen = () => tmux('capture-pane', '-p', '-t', 'top').stdout;

    const calls = (text) => Number((/calls\/s ([\d,.]+)/.exec(text)?.[1] ?? '0').replace(/,/g, ''));
    const shown = await until(
      () => {
        const s = screen();
        return /durable-workers top/.test(s) && /Counter "hot"/.test(s) && calls(s) > 0 ? s : null;
      },
      20_000,
      () => `the view on screen:\n${screen()}`,
      100,
    );
    t.regex(shown, /durable-workers top {2}\S+data {2}pid \d+/);
    t.regex(shown, /next alarms {2}\(1 pending\)\n {2}in (59m|60m|1h 0m) .*Reminder "r1"/);
    t.regex(shown, /shards {2}none/);
    t.false(shown.includes('\x1b'), 'escape codes are for the terminal, not on screen');
    const heading = (s) => s.split('\n').find((l) => l.startsWith('busiest workers')) ?? '';
    t.true(heading(shown).indexOf('mailbox') > 80, heading(shown));

    t.is(tmux('resize-window', '-t', 'top', '-x', '70', '-y', '30').status, 0);
    const narrow = await until(
      () => (heading(screen()).indexOf('mailbox') > 0 && heading(screen()).indexOf('mailbox') < 70 ? screen() : null),
      10_000,
      () => `a redraw at 70 columns:\n${screen()}`,
      100,
    );
    t.regex(narrow, /Counter "hot"/);

    tmux('send-keys', '-t', 'top', 'q');
    const after = await until(
      () => (/top exited \d+/.test(screen()) ? screen() : null),
      10_000,
      () => `top to exit on q:\n${screen()}`,
      100,
    );
    t.regex(after, /top exited 0/);
    t.false(/busiest workers/.test(after), 'the main screen is back: the view was on the alternate screen');
  },
);
