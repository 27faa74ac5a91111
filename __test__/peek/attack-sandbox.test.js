'use strict';
// The attack suite, sandbox part (issue 24, item 3): a worker that reaches
// past the import refusal with process.getBuiltinModule (node:fs, node:net,
// node:dgram, node:dns, node:child_process: no grant, no refused import)
// tries to see and kill other processes, read the supervisor's files, reach
// anything on any network, leave a process behind, and forge the audit log.
// Each probe runs through the real `peek run`, sandboxed; the same probes
// with `--sandbox off` reach what the sandbox stops (that is the guard-rail
// the docs describe, and what shows these probes are not vacuous).
const test = require('ava');
const fs = require('node:fs');
const os = require('node:os');
const net = require('node:net');
const dgram = require('node:dgram');
const path = require('node:path');
const { worker, runCli, setup, httpServer, serve } = require('../helpers/peek');
const { until } = require('../helpers/poll');
const { tmpDir } = require('../helpers/tmp');
const { sandboxStatus } = require('../../js/peek/node/sandbox');
const { NOBODY, cannotSwitchUser, readableInstall, superviseFrom } = require('../helpers/nobody');

const status = sandboxStatus();
const sandboxed = status.ok ? test.serial : test.serial.skip;
if (!status.ok) console.log(`peek/attack-sandbox: the sandboxed tests are skipped: ${status.reason}`);
const asRoot = status.ok && status.mode === 'root' ? test.serial : test.serial.skip;
if (status.ok && status.mode !== 'root') console.log('peek/attack-sandbox: the distinct-uid test is skipped: the supervisor is not root');

const PROBE = `
const b = (name) => process.getBuiltinModule(name);
const fs = b('node:fs');
const net = b('node:net');
const attempt = (f) => { try { return f(); } catch (err) { return err.code ?? err.message; } };
const connect = (options) => new Promise((resolve) => {
  const s = net.connect(options);
  const t = setTimeout(() => { s.destroy(); resolve('timeout'); }, 2000);
  s.on('connect', () => { clearTimeout(t); s.destroy(); resolve('connected'); });
  s.on('error', (err) => { clearTimeout(t); resolve(err.code); });
});
const udp = (host, port) => new Promise((resolve) => {
  const s = b('node:dgram').createSocket('udp4');
  s.on('error', (err) => resolve(err.code));
  s.send('probe', port, host, (err) => { s.close(); resolve(err ? err.code : 'sent'); });
});
const lookup = (name) => b('node:dns').promises.lookup(name).then((a) => 'resolved ' + a.address, (err) => err.code);

export const procs = (api, ctx) => {
  const { victim, supervisor } = ctx.trigger.params;
  return {
    pids: fs.readdirSync('/proc').filter((n) => /^[0-9]+$/.test(n)).map(Number),
    victimEnviron: attempt(() => fs.readFileSync('/proc/' + victim + '/environ', 'latin1').length),
    killVictim: attempt(() => (process.kill(victim, 'SIGKILL'), 'killed')),
    killSupervisor: attempt(() => (process.kill(supervisor, 'SIGKILL'), 'killed')),
    killInit: attempt(() => (process.kill(1, 'SIGKILL'), 'killed')),
    uid: process.getuid(),
    writeRoot: attempt(() => (fs.writeFileSync('/x', ''), 'wrote')),
    writeDev: attempt(() => (fs.writeFileSync('/dev/x', ''), 'wrote')),
    tmpfsBytes: ['/tmp', '/dev/shm', '/peek/worker'].map((d) => attempt(() => { const st = fs.statfsSync(d); return st.blocks * st.bsize; })),
    maxProcesses: fs.readFileSync('/proc/self/limits', 'utf8').split(String.fromCharCode(10)).find((l) => l.startsWith('Max processes')).split(/ +/)[2],
    privileges: fs.readFileSync('/proc/self/status', 'utf8').split(String.fromCharCode(10)).filter((l) => /^(CapEff|CapPrm|CapBnd|CapAmb|NoNewPrivs):/.test(l)).map((l) => l.replace(/[ \t]+/g, ' ')),
  };
};

export const files = (api, ctx) => Object.fromEntries(ctx.trigger.params.paths.map((p) => [p, attempt(() => fs.readFileSync(p).length)]));

export const network = async (api, ctx) => {
  const p = ctx.trigger.params;
  return {
    tcpLoopback: await connect({ host: '127.0.0.1', port: p.tcpPort }),
    tcpOtherAddress: p.external ? await connect({ host: p.external, port: p.tcpPort }) : 'no other address',
    udpLoopback: await udp('127.0.0.1', p.udpPort),
    udpOtherAddress: p.external ? await udp(p.external, p.udpPort) : 'no other address',
    tcpOtherHost: p.other ? await connect({ host: p.other.address, port: p.other.tcpPort }) : 'no other host',
    udpOtherHost: p.other ? await udp(p.other.address, p.other.udpPort) : 'no other host',
    unixPath: await connect({ path: p.unixPath }),
    unixAbstract: await connect({ path: '\\0' + p.abstract }),
    dnsLocalhost: await lookup('localhost'),
    dnsName: await lookup('registry.npmjs.org'),
  };
};

export const leave = (api, ctx) => {
  const child = b('node:child_process').spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)', ctx.trigger.params.marker], { detached: true, stdio: 'ignore' });
  child.unref();
  return child.pid;
};

export const forge = async (api, ctx) => {
  // A frame of our own on the pipe to the supervisor: an audit record of a fetch that never happened.
  const payload = b('node:v8').serialize({ t: 'net', method: 'GET', url: 'https://forged.example/', allowed: true });
  const header = Buffer.alloc(4);
  header.writeUInt32BE(payload.length);
  fs.writeSync(3, Buffer.concat([header, payload]));
  await new Promise((r) => setTimeout(r, 2000));
  return 'not stopped';
};

export default (api, ctx) => ({ procs, files, network })[ctx.trigger.name](api, ctx);

export const relay = async (api, ctx) => {
  const r = await fetch(ctx.trigger.params.url, { method: 'POST', body: 'from the run', headers: { 'x-probe': '1' } });
  return { status: r.status, body: await r.text(), header: r.headers.get('x-server') };
};
`;

function probeWorker(t, manifest = {}) {
  const dir = tmpDir(t);
  return { dir, file: worker(dir, 'probe', PROBE, { commands: ['procs', 'files', 'network', 'leave', 'forge', 'relay'], worker: { url: 'probe.js', entry: 'procs' }, ...manifest }) };
}

/** Runs the probe's `entry` through `peek run`, sandboxed unless `mode` says otherwise. */
async function probe(t, entry, params, { mode = 'required', manifest = {} } = {}) {
  const { file, dir } = probeWorker(t, { worker: { url: 'probe.js', entry }, ...manifest });
  const r = await runCli(file, ['--trigger', `command:${entry}`, '--params', JSON.stringify(params), '--sandbox', mode, '--state', path.join(dir, 'state')]);
  return { ...r, dir };
}

/**
 * Another host: a network namespace joined to this one by a veth pair, with a
 * TCP and a UDP server at 10.213.<n>.2 that print what reaches them. Null
 * (and the probe skips that address) where it cannot be made: not root, no
 * iproute2.
 */
async function otherHost(t) {
  const { spawnSync, spawn } = require('node:child_process');
  if (process.getuid?.() !== 0 || spawnSync('ip', ['-V']).status !== 0) return null;
  const n = process.pid % 250;
  const ns = `dwtest${process.pid}`;
  const [host, peer] = [`dwh${process.pid}`, `dwp${process.pid}`].map((x) => x.slice(0, 15));
  const ip = (...args) => spawnSync('ip', args, { encoding: 'utf8' });
  t.teardown(() => {
    ip('netns', 'del', ns);
    ip('link', 'del', host);
  });
  for (const args of [
    ['netns', 'add', ns],
    ['link', 'add', host, 'type', 'veth', 'peer', 'name', peer],
    ['link', 'set', peer, 'netns', ns],
    ['addr', 'add', `10.213.${n}.1/30`, 'dev', host],
    ['link', 'set', host, 'up'],
    ['netns', 'exec', ns, 'ip', 'addr', 'add', `10.213.${n}.2/30`, 'dev', peer],
    ['netns', 'exec', ns, 'ip', 'link', 'set', peer, 'up'],
  ]) {
    const r = ip(...args);
    if (r.status !== 0) throw new Error(`ip ${args.join(' ')}: ${r.stderr}`);
  }
  const address = `10.213.${n}.2`;
  const server = spawn(
    'ip',
    [
      'netns',
      'exec',
      ns,
      process.execPath,
      '-e',
      `
    const a = ${JSON.stringify(address)};
    const tcp = require('node:net').createServer((s) => { console.log('tcp'); s.destroy(); }).listen(0, a, () => {
      const udp = require('node:dgram').createSocket('udp4').on('message', () => console.log('udp')).bind(0, a, () => console.log(JSON.stringify({ tcp: tcp.address().port, udp: udp.address().port })));
    });`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  t.teardown(() => server.kill('SIGKILL'));
  const lines = [];
  require('node:readline')
    .createInterface({ input: server.stdout })
    .on('line', (l) => lines.push(l));
  const deadline = Date.now() + 10_000;
  while (lines.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  const ports = JSON.parse(lines[0]);
  return { address, tcpPort: ports.tcp, udpPort: ports.udp, hits: () => lines.slice(1) };
}

function externalAddress() {
  for (const list of Object.values(os.networkInterfaces())) for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  return null;
}

/** A long-lived process standing in for another run: its environment holds a secret. */
function victim(t) {
  const { spawn } = require('node:child_process');
  const proc = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { env: { SECRET: 'victim-secret' }, stdio: 'ignore' });
  t.teardown(() => proc.kill('SIGKILL'));
  return proc;
}

sandboxed('a sandboxed run sees only its own processes: not another process, not the supervisor; it can kill neither, nor its namespace’s init', async (t) => {
  const v = victim(t);
  const r = await probe(t, 'procs', { victim: v.pid, supervisor: process.pid });
  t.is(r.code, 0, r.stderr);
  const o = r.run.value;
  t.true(o.pids.length <= 3 && !o.pids.includes(v.pid) && !o.pids.includes(process.pid), `pids seen: ${o.pids}`);
  t.is(o.victimEnviron, 'ENOENT');
  t.is(o.killVictim, 'ESRCH');
  t.is(o.killSupervisor, 'ESRCH');
  t.is(o.killInit, 'EPERM');
  t.deepEqual(o.privileges, ['CapPrm: 0000000000000000', 'CapEff: 0000000000000000', 'CapBnd: 0000000000000000', 'CapAmb: 0000000000000000', 'NoNewPrivs: 1'], 'no capability, none to gain');
  t.deepEqual([o.writeRoot, o.writeDev], ['EROFS', 'EROFS'], '/ and /dev are read-only');
  t.deepEqual(o.tmpfsBytes, [64 * 1024 * 1024, 64 * 1024 * 1024, 64 * 1024 * 1024], '/tmp, /dev/shm and /peek/worker are 64 MiB each');
  if (status.mode === 'root') t.is(o.maxProcesses, '512', 'a run of its own uid has at most 512 tasks');
  t.is(v.exitCode, null, 'the other process still runs');
  t.is(v.signalCode, null);

  const open = await probe(t, 'procs', { victim: v.pid, supervisor: 1 }, { mode: 'off' });
  t.true(open.run.value.pids.includes(v.pid), 'without the sandbox the other process is in view');
});

sandboxed('a sandboxed run reads none of the supervisor’s files: not the state directory, the store, a credentials file, the manifest, /etc', async (t) => {
  // Granted the datastore: the supervisor opens the store (and its files) for the run. The state
  // directory and the credentials file sit inside the worker's package, as `peek run`'s defaults
  // put them (<manifest dir>/.peek-state): its shipped copy must not hold them either.
  const { file, dir: wdir } = probeWorker(t, { worker: { url: 'probe.js', entry: 'files' }, capabilities: { datastore: { methods: ['describe'] } } });
  const creds = path.join(wdir, 'credentials.json');
  fs.writeFileSync(creds, JSON.stringify({ probe: 'a-credential' }), { mode: 0o600 });
  const state = path.join(wdir, 'state');
  const run = (paths, mode) => runCli(file, ['--trigger', 'command:files', '--params', JSON.stringify({ paths }), '--state', state, '--sandbox', mode, '--credentials', creds]);
  const first = await run([], 'required');
  t.is(first.code, 0, first.stderr);
  const stateFiles = fs
    .readdirSync(state, { recursive: true })
    .map((f) => path.join(state, f))
    .filter((f) => fs.statSync(f).isFile());
  t.true(stateFiles.length > 0);
  const copies = [...stateFiles, creds].map((f) => `/peek/worker/${path.relative(wdir, f)}`);
  const paths = [...stateFiles, creds, file, '/etc/passwd', '/etc/hostname', path.join(os.homedir(), '.bashrc'), ...copies];
  const r = await run([...paths, '/peek/worker/probe.js'], 'required');
  t.is(r.code, 0, r.stderr);
  for (const p of paths) t.is(r.run.value[p], 'ENOENT', `${p}: ${r.run.value[p]}`);
  t.is(typeof r.run.value['/peek/worker/probe.js'], 'number', 'the worker’s own code is shipped (the control)');

  const open = await run([creds, stateFiles[0]], 'off');
  t.is(open.code, 0, open.stderr);
  t.notDeepEqual(Object.values(open.run.value), ['ENOENT', 'ENOENT'], 'without the sandbox (and as the same user) the run opens what the supervisor can');
});

sandboxed(
  'a sandboxed run has no network: TCP and UDP to loopback, to this host’s other address and to another host on a test network namespace, Unix sockets by path and abstract name, DNS',
  async (t) => {
    const hits = [];
    const tcp = net.createServer((s) => {
      hits.push('tcp');
      s.destroy();
    });
    await new Promise((r) => tcp.listen(0, '0.0.0.0', r));
    const udp = dgram.createSocket('udp4');
    udp.on('message', () => hits.push('udp'));
    await new Promise((r) => udp.bind(0, '0.0.0.0', r));
    const unixPath = path.join(tmpDir(t), 'sock');
    const abstract = `peek-probe-${process.pid}-${Date.now()}`;
    const unix = net.createServer((s) => {
      hits.push('unix');
      s.destroy();
    });
    await new Promise((r) => unix.listen(unixPath, r));
    const unixAbstract = net.createServer((s) => {
      hits.push('abstract');
      s.destroy();
    });
    await new Promise((r) => unixAbstract.listen(`\0${abstract}`, r));
    t.teardown(() => {
      tcp.close();
      udp.close();
      unix.close();
      unixAbstract.close();
    });
    const other = await otherHost(t);
    if (other === null) t.log('no other host on a test network namespace (needs root and iproute2): that probe is not made');
    const params = { tcpPort: tcp.address().port, udpPort: udp.address().port, external: externalAddress(), unixPath, abstract, other };
    const r = await probe(t, 'network', params);
    t.is(r.code, 0, r.stderr);
    const o = r.run.value;
    t.log(JSON.stringify(o));
    for (const key of ['tcpLoopback', 'tcpOtherAddress', 'tcpOtherHost', 'unixPath', 'unixAbstract'])
      t.regex(String(o[key]), /^(ECONNREFUSED|ENETUNREACH|ENOENT|EHOSTUNREACH|no other address|no other host)$/, key);
    t.regex(String(o.udpOtherHost), /^(ENETUNREACH|EHOSTUNREACH|no other host)$/);
    // A datagram is "sent" into a namespace where nothing listens, or refused outright.
    t.regex(String(o.udpLoopback), /^(sent|ECONNREFUSED|ENETUNREACH)$/);
    t.not(o.dnsLocalhost.startsWith('resolved') && o.dnsName.startsWith('resolved'), true);
    t.false(o.dnsName.startsWith('resolved'), `a name was resolved: ${o.dnsName}`);
    await new Promise((r) => setTimeout(r, 300));
    t.deepEqual(hits, [], 'nothing reached any server of this host');
    if (other !== null) t.deepEqual(other.hits(), [], 'nothing reached the other host');

    const open = await probe(t, 'network', params, { mode: 'off' });
    t.is(open.run.value.tcpLoopback, 'connected', 'without the sandbox the run connects to loopback');
    t.is(open.run.value.unixPath, 'connected');
    if (other !== null) {
      t.is(open.run.value.tcpOtherHost, 'connected', 'without the sandbox the run reaches the other host');
      await new Promise((r) => setTimeout(r, 200));
      t.true(other.hits().includes('udp'), 'and its UDP server');
    }
  },
);

sandboxed('a process a sandboxed run started, in a session of its own, ends with the run', async (t) => {
  const marker = `peek-leave-${process.pid}-${Date.now()}`;
  const r = await probe(t, 'leave', { marker });
  t.is(r.code, 0, r.stderr);
  const holders = () =>
    fs.readdirSync('/proc').filter((p) => {
      try {
        return /^\d+$/.test(p) && fs.readFileSync(`/proc/${p}/cmdline`, 'latin1').includes(marker);
      } catch {
        return false;
      }
    });
  const deadline = Date.now() + 3000;
  while (holders().length > 0 && Date.now() < deadline) await new Promise((res) => setTimeout(res, 50));
  const left = holders();
  for (const pid of left) process.kill(Number(pid), 'SIGKILL');
  t.deepEqual(left, [], 'a process of the run outlived it');
});

sandboxed('a sandboxed run cannot forge the audit log: a net record of its own breaks the protocol', async (t) => {
  const r = await probe(t, 'forge', {});
  t.is(r.code, 1);
  t.is(r.run.error.code, 'ERR_PEEK_PROTOCOL');
  t.false(
    r.lines.some((l) => l.event === 'log' && JSON.stringify(l.args).includes('forged.example')),
    'the forged record was logged',
  );
});

sandboxed('a sandboxed run fetches through the supervisor: a granted request arrives with its method, headers and body, and the log names it', async (t) => {
  const seen = [];
  const origin = await httpServer(t, (req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      seen.push({ method: req.method, probe: req.headers['x-probe'], body });
      res.setHeader('x-server', 'yes');
      res.end('answer');
    });
  });
  const manifest = { capabilities: { network: { domains: ['127.0.0.1'] } } };
  const r = await probe(t, 'relay', { url: `${origin}/x` }, { manifest });
  t.is(r.code, 0, r.stderr);
  t.deepEqual(r.run.value, { status: 200, body: 'answer', header: 'yes' });
  t.deepEqual(seen, [{ method: 'POST', probe: '1', body: 'from the run' }]);
  t.true(
    r.lines.some((l) => l.event === 'log' && l.args.join(' ').includes(`POST ${origin}/x allowed`)),
    JSON.stringify(r.lines),
  );
  // Not granted: refused by the supervisor, and the server is not reached.
  const denied = await probe(t, 'relay', { url: `${origin}/y` });
  t.is(denied.run.error.code, 'ERR_PEEK_NETWORK_DENIED');
  t.is(seen.length, 1);
});

asRoot('concurrent sandboxed runs are distinct users', async (t) => {
  const { dir, host } = setup(t, { sandbox: 'required', spares: 2 });
  const file = worker(dir, 'who', `export default async () => { await new Promise((r) => setTimeout(r, 300)); return process.getuid(); }`);
  const trigger = { kind: 'command', name: 'who', params: {} };
  const other = path.join(dir, 'other');
  fs.mkdirSync(other);
  const file2 = worker(other, 'who2', `export default async () => { await new Promise((r) => setTimeout(r, 300)); return process.getuid(); }`);
  const [a, b] = await Promise.all([host.run(file, trigger), host.run(file2, { ...trigger, name: 'who2' })]);
  t.true(a.ok && b.ok, JSON.stringify([a, b]));
  t.not(a.value, b.value);
  t.not(a.value, 0);
  t.not(b.value, 0);
});

const noNobody = status.ok ? cannotSwitchUser() : status.reason;
if (noNobody !== null) console.log(`peek/attack-sandbox: the unprivileged-supervisor test is skipped: ${noNobody}`);
(noNobody === null ? test.serial : test.serial.skip)('an unprivileged supervisor (uid 65534) sandboxes in a user namespace: the process, file and network probes hold the same', async (t) => {
  t.timeout(120_000);
  const install = readableInstall();
  const dir = tmpDir(t);
  fs.chmodSync(dir, 0o755);
  const file = worker(dir, 'probe', PROBE, { commands: ['procs', 'files', 'network'] });
  for (const f of fs.readdirSync(dir)) fs.chmodSync(path.join(dir, f), 0o644);
  const v = victim(t);
  const tcp = net.createServer((s) => s.destroy());
  await new Promise((r) => tcp.listen(0, '127.0.0.1', r));
  t.teardown(() => tcp.close());
  let reached = 0;
  tcp.on('connection', () => reached++);
  const jobs = [
    ['procs', { victim: v.pid, supervisor: 1 }],
    ['files', { paths: [file, '/etc/passwd'] }],
    ['network', { tcpPort: tcp.address().port, udpPort: 9, unixPath: '/nonexistent', abstract: 'x' }],
  ];
  const out = await superviseFrom(
    install,
    `const { createWorkerHost, nodeAdapter } = require(root + '/js/peek');
    const adapter = nodeAdapter({ sandbox: 'required', log: () => {} });
    const host = createWorkerHost({ adapter });
    const out = { sandbox: adapter.sandbox, uid: process.getuid() };
    try {
      for (const [entry, params] of JSON.parse(args[1])) {
        const r = await host.run(args[0], { kind: 'command', name: entry, params });
        out[entry] = r.ok ? r.value : { error: r.error.code + ' ' + r.error.message };
      }
    } finally {
      await host.close();
      await adapter.close();
    }
    return out;`,
    [file, JSON.stringify(jobs)],
    { asNobody: true },
  );
  t.deepEqual(out.sandbox, { on: true, mode: 'userns' });
  t.is(out.uid, NOBODY);
  t.is(out.procs.uid, NOBODY, `runs are the supervisor’s uid: ${JSON.stringify(out)}`);
  t.true(out.procs.pids.length <= 3 && !out.procs.pids.includes(v.pid), JSON.stringify(out.procs));
  t.is(out.procs.killVictim, 'ESRCH');
  t.deepEqual(out.procs.privileges, ['CapPrm: 0000000000000000', 'CapEff: 0000000000000000', 'CapBnd: 0000000000000000', 'CapAmb: 0000000000000000', 'NoNewPrivs: 1']);
  t.deepEqual(out.files, { [file]: 'ENOENT', '/etc/passwd': 'ENOENT' });
  t.regex(String(out.network.tcpLoopback), /^(ECONNREFUSED|ENETUNREACH)$/);
  t.false(String(out.network.dnsName).startsWith('resolved'));
  t.is(reached, 0);
});

test.serial('peek serve says once at start whether runs are sandboxed, and the enforcement that follows', async (t) => {
  const said = async (mode) => {
    const dir = tmpDir(t);
    const workers = path.join(dir, 'workers');
    fs.mkdirSync(workers);
    const s = serve(t, workers, ['--state', path.join(dir, 'state'), '--sandbox', mode]);
    const lines = () => s.lines.filter((l) => l.event === 'log' && l.worker === '(supervisor)' && /sandboxed/.test(l.args[0]));
    await until(
      () => lines().length > 0,
      20_000,
      () => `the sandbox line; stderr: ${s.stderr()}`,
    );
    s.proc.kill('SIGTERM');
    await s.exited;
    return lines();
  };
  const off = await said('off');
  t.is(off.length, 1);
  t.is(off[0].level, 'warn');
  t.regex(off[0].args[0], /NOT sandboxed: turned off .*guard-rail/);
  if (status.ok) {
    const on = await said('auto');
    t.is(on.length, 1);
    t.regex(on[0].args[0], /^runs are sandboxed .*egress-control/);
  }
});

test('sandbox options are checked: a mode other than auto, required or off, and a uid range out of bounds, are refused naming the option', (t) => {
  const { nodeAdapter } = require('durable-workers/peek');
  t.throws(() => nodeAdapter({ sandbox: 'yes' }), { instanceOf: TypeError, message: /nodeAdapter\(\{ sandbox \}\): 'auto', 'required' or 'off', got "yes"/ });
  t.throws(() => nodeAdapter({ sandbox: 'off', sandboxUids: [0, 10] }), { instanceOf: RangeError, message: /sandboxUids/ });
  t.throws(() => nodeAdapter({ sandbox: 'off', sandboxUids: [2 ** 32 - 10, 100] }), { instanceOf: RangeError, message: /sandboxUids/ });
  const cli = require('node:child_process').spawnSync(process.execPath, [path.join(__dirname, '..', '..', 'bin', 'durable-workers.js'), 'peek', 'run', 'x.json', '--sandbox', 'maybe'], {
    encoding: 'utf8',
  });
  t.is(cli.status, 2);
  t.regex(cli.stderr, /--sandbox maybe: use auto, required or off/);
});
