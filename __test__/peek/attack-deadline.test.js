'use strict';
// The attack suite, deadline part (issue 24, item 2): a run's process and
// whatever it starts end at the deadline and when the result is in, without
// the run's cooperation, and `peek run` answers within a bounded grace after
// the deadline whatever the run did to its stdio.
//
// A worker cannot load node:child_process (refused.js), but Node 20 still
// hands it process.binding('spawn_sync'), and with it a shell: these workers
// start grandchildren that way. Without the sandbox (--sandbox off: these
// workers write pid files where the supervisor reads them) the process group
// reaches those that stay in it, and one that leaves it (setsid) is out of
// reach; the sandbox's PID namespace ends that one too, found by a marker in
// its command line (a sandboxed run writes nowhere the test can read).
const test = require('ava');
const fs = require('node:fs');
const { worker, runCli } = require('../helpers/peek');
const { tmpDir } = require('../helpers/tmp');
const { until } = require('../helpers/poll');
const { sandboxStatus } = require('../../js/peek/node/sandbox');

/** The worker's own way to start `sh -c <script>` and read its stdout. */
const SPAWN = `
const sh = (script, stdout = 'pipe') => {
  const r = process.binding('spawn_sync').spawn({
    file: '/bin/sh',
    args: ['/bin/sh', '-c', script],
    envPairs: ['PATH=' + (process.env.PATH ?? '/usr/bin:/bin')],
    stdio: [{ type: 'ignore' }, stdout === 'pipe' ? { type: 'pipe', readable: true, writable: true } : { type: 'fd', fd: 1 }, { type: 'fd', fd: 2 }],
  });
  if (r.error || r.status !== 0) throw new Error('spawn failed: ' + (r.error ?? 'status ' + r.status));
  return stdout === 'pipe' ? String(r.output[1]).trim() : '';
};
`;

/** Whether `pid` is a live process (a zombie is not: it runs nothing). */
function alive(pid) {
  let stat;
  try {
    stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return false;
  }
  const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  return state !== 'Z' && state !== 'X';
}

const killLater = (t, pids) =>
  t.teardown(() => {
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {}
    }
  });

const pidsIn = (file) => (fs.existsSync(file) ? fs.readFileSync(file, 'utf8').split(/\s+/).filter(Boolean).map(Number) : []);

test('what a run started ends when its result is in', async (t) => {
  const dir = tmpDir(t);
  const file = worker(
    dir,
    'spawner',
    `${SPAWN}
export default () => Number(sh('sleep 60 >/dev/null 2>&1 & echo $!'));`,
  );
  const r = await runCli(file, ['--sandbox', 'off']);
  t.is(r.code, 0, r.stderr);
  const pid = r.run.value;
  killLater(t, [pid]);
  t.true(Number.isInteger(pid) && pid > 0, `the worker started a grandchild (${pid})`);
  await until(() => !alive(pid), 2000, `the grandchild ${pid} to be gone`).catch(() => {});
  t.false(alive(pid), `the grandchild ${pid} outlived the run`);
});

test('at the deadline the run, its grandchildren and a grandchild holding its stdout all end, and peek run answers within a bounded grace', async (t) => {
  const dir = tmpDir(t);
  const pidFile = `${dir}/pids`;
  const file = worker(
    dir,
    'holder',
    `${SPAWN}
export default async () => {
  // A grandchild that keeps the run's stdout and stderr open, one in the background,
  // and the run itself ignoring its signal.
  sh('sleep 60 & echo $! >> ${pidFile}', 'inherit');
  sh('sleep 60 >/dev/null 2>&1 & echo $! >> ${pidFile}', 'inherit');
  process.removeAllListeners();
  setInterval(() => {}, 1000);
  await new Promise(() => {});
};`,
    { limits: { wallClockMs: 1500 } },
  );
  const r = await runCli(file, ['--sandbox', 'off'], { timeoutMs: 30_000 });
  const pids = pidsIn(pidFile);
  killLater(t, pids);
  t.is(r.signal, null, `peek run answered (it was killed after 30 s otherwise); ${r.stderr.slice(0, 500)}`);
  t.is(r.run?.error?.code, 'ERR_PEEK_DEADLINE', JSON.stringify(r.run));
  t.true(r.ms < 1500 + 3500, `peek run ended ${r.ms} ms after it started (deadline 1500 ms)`);
  t.is(pids.length, 2, 'two grandchildren were started');
  await until(() => pids.every((p) => !alive(p)), 2000, 'the grandchildren to be gone').catch(() => {});
  t.deepEqual(
    pids.filter((p) => alive(p)),
    [],
    'no grandchild outlived the deadline',
  );
});

/** Live processes whose command line holds `marker`. */
const holding = (marker) =>
  fs.readdirSync('/proc').filter((p) => {
    try {
      return /^\d+$/.test(p) && alive(Number(p)) && fs.readFileSync(`/proc/${p}/cmdline`, 'latin1').includes(marker);
    } catch {
      return false;
    }
  });

/** A `sleep` argument no other process has: 60 s and a unique fraction (GNU sleep takes one). */
const markedSleep = () => `60.${process.pid}${Date.now() % 100000}`;

for (const mode of ['off', 'required']) {
  const boxed = mode === 'required';
  const reason = boxed && !sandboxStatus().ok ? sandboxStatus().reason : null;
  if (reason !== null) console.log(`peek/attack-deadline: the sandboxed setsid test is skipped: ${reason}`);
  (reason === null ? test : test.skip)(
    `a grandchild that leaves the process group (setsid) and holds every pipe: peek run answers within the grace${boxed ? ', and the sandbox ends the grandchild' : ' (unsandboxed, the grandchild is out of reach)'}`,
    async (t) => {
      const dir = tmpDir(t);
      const marker = markedSleep();
      const file = worker(
        dir,
        'escaper',
        `${SPAWN}
export default async () => {
  sh('setsid sleep ${marker} &', 'inherit');
  setInterval(() => {}, 1000);
  await new Promise(() => {});
};`,
        { limits: { wallClockMs: 1500 } },
      );
      const r = await runCli(file, ['--sandbox', mode], { timeoutMs: 30_000 });
      const escaped = holding(marker);
      t.teardown(() => holding(marker).forEach((p) => process.kill(Number(p), 'SIGKILL')));
      t.is(r.signal, null, `peek run answered (it was killed after 30 s otherwise); ${r.stderr.slice(0, 500)}`);
      t.is(r.run?.error?.code, 'ERR_PEEK_DEADLINE', JSON.stringify(r.run));
      t.true(r.ms < 1500 + 3500, `peek run ended ${r.ms} ms after it started (deadline 1500 ms)`);
      if (boxed) {
        await until(() => holding(marker).length === 0, 2000, 'the grandchild to be gone').catch(() => {});
        t.deepEqual(holding(marker), [], 'the grandchild that left the group outlived the sandboxed run');
      } else {
        t.log(`unsandboxed, the grandchild that left the group is ${escaped.length > 0 ? 'still running' : 'gone'} after the run`);
      }
    },
  );
}

const { SETPRIV } = require('../../js/peek/node/process');
if (SETPRIV === null)
  console.log('peek/attack-deadline: the supervisor-SIGKILL test is skipped: no util-linux setpriv with --pdeathsig here, so a run that removes its pipe listeners outlives a killed supervisor');
(SETPRIV === null ? test.skip : test)('a run that took away its own watch on the supervisor still ends when the supervisor is SIGKILLed', async (t) => {
  const dir = tmpDir(t);
  const pidFile = `${dir}/pid`;
  const file = worker(
    dir,
    'orphan',
    `import fs from 'node:fs';
export default async () => {
  // The old channel's 'disconnect' and every listener on every handle (the frame pipe's 'end').
  process.removeAllListeners();
  for (const h of process._getActiveHandles()) h.removeAllListeners?.();
  setInterval(() => {}, 1000);
  fs.writeFileSync(${JSON.stringify(pidFile)}, String(process.pid));
  await new Promise(() => {});
};`,
    { limits: { wallClockMs: 60_000 } },
  );
  const { spawn } = require('node:child_process');
  const path = require('node:path');
  const cli = spawn(process.execPath, [path.join(__dirname, '..', '..', 'bin', 'durable-workers.js'), 'peek', 'run', file, '--json', '--sandbox', 'off'], { stdio: 'ignore' });
  const exited = new Promise((resolve) => cli.once('exit', resolve));
  t.teardown(() => cli.kill('SIGKILL'));
  const pid = await until(() => pidsIn(pidFile)[0], 20_000, 'the run to start');
  killLater(t, [pid]);
  cli.kill('SIGKILL');
  await exited;
  await until(() => !alive(pid), 3000, `the run's process ${pid} to end`).catch(() => {});
  t.false(alive(pid), `the run's process ${pid} outlived its supervisor`);
});

(sandboxStatus().ok ? test : test.skip)('a sandboxed run, and what it started in a session of its own, end when the supervisor is SIGKILLed', async (t) => {
  const dir = tmpDir(t);
  const marker = markedSleep();
  const file = worker(
    dir,
    'orphan',
    `${SPAWN}
export default async () => {
  process.removeAllListeners();
  for (const h of process._getActiveHandles()) h.removeAllListeners?.();
  sh('setsid sleep ${marker} &', 'inherit');
  setInterval(() => {}, 1000);
  await new Promise(() => {});
};`,
    { limits: { wallClockMs: 60_000 } },
  );
  const { spawn } = require('node:child_process');
  const path = require('node:path');
  const cli = spawn(process.execPath, [path.join(__dirname, '..', '..', 'bin', 'durable-workers.js'), 'peek', 'run', file, '--json', '--sandbox', 'required'], { stdio: 'ignore' });
  const exited = new Promise((resolve) => cli.once('exit', resolve));
  t.teardown(() => {
    cli.kill('SIGKILL');
    holding(marker).forEach((p) => process.kill(Number(p), 'SIGKILL'));
  });
  await until(() => holding(marker).length > 0, 20_000, 'the run to start its grandchild');
  cli.kill('SIGKILL');
  await exited;
  await until(() => holding(marker).length === 0, 3000, 'the grandchild to end').catch(() => {});
  t.deepEqual(holding(marker), [], 'a process of the sandboxed run outlived its supervisor');
});
