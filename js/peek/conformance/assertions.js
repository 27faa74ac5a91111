'use strict';
// The assertions: the same on every adapter. An adapter that fails one is not
// an adapter of this contract. Each returns { ok, observed }. The first eight
// are the design's (§8); 9 and 10 check the rest of `api` (docs/peek.md, "The
// lifecycle and handlers").
const fs = require('node:fs');
const path = require('node:path');
const zlib = require('node:zlib');
const { credentialEnvName } = require('../credentials');
const { sleep } = require('./harness');

const codeOf = (r) => (r.ok ? 'ok' : (r.error?.code ?? r.error?.message));

const assertions = [
  {
    id: 1,
    name: 'load and run: returns the session from api.datastore.describe()',
    async check(h) {
      const r = await h.run('hello');
      const s = r.ok ? r.value : null;
      const ok = s !== null && typeof s.user === 'string' && typeof s.profile === 'string' && typeof s.store === 'string';
      return { ok, observed: ok ? `user ${s.user}, profile ${s.profile}, store ${s.store}` : `run ${codeOf(r)}: ${r.error?.message ?? JSON.stringify(r.value)}` };
    },
  },
  {
    id: 2,
    name: 'absent is absent: ungranted namespaces are undefined',
    async check(h) {
      const r = await h.run('absent');
      if (!r.ok) return { ok: false, observed: `run failed: ${r.error.message}` };
      const present = Object.entries(r.value).filter(([, t]) => t !== 'undefined');
      return { ok: present.length === 0, observed: present.length ? `present: ${present.map(([n, t]) => `${n} (${t})`).join(', ')}` : `${Object.keys(r.value).join(', ')}: undefined` };
    },
  },
  {
    id: 3,
    name: 'no credential in reach: a walk of api (toString incl.), the run’s heap',
    async check(h, options) {
      const credential = `peek-cred-${h.nonce}-${Math.random().toString(36).slice(2)}`;
      const undo = [];
      try {
        // Both probes are granted the datastore and use it: the credential is
        // in play in the host (a remote store sends it with every call).
        undo.push(await options.mintCredential('probe-walk', credential));
        undo.push(await options.mintCredential('probe-heap', credential));
        const walk = await walkProbe(h, credential);
        const heap = await heapProbe(h, credential);
        return { ok: walk.ok && heap.ok, observed: `walk: ${walk.observed}; heap: ${heap.observed}` };
      } finally {
        for (const u of undo.reverse()) await u?.();
      }
    },
  },
  {
    id: 4,
    name: 'fresh module graph: each run captures its own window.app',
    async check(h) {
      const a = await h.run('fresh');
      const b = await h.run('fresh');
      if (!a.ok || !b.ok) return { ok: false, observed: `run failed: ${(a.error ?? b.error).message}` };
      const ok = a.value.capturedIsThisRunsApi && b.value.capturedIsThisRunsApi && a.value.appIsApi && b.value.appIsApi;
      return { ok, observed: `run 1 captured its api: ${a.value.capturedIsThisRunsApi}, run 2: ${b.value.capturedIsThisRunsApi}` };
    },
  },
  {
    id: 5,
    name: 'the network guard denies: a fetch outside the domains throws, the run fails',
    async check(h) {
      const r = await h.run('deny');
      return { ok: !r.ok && r.error.code === 'ERR_PEEK_NETWORK_DENIED', observed: r.ok ? `run succeeded: ${JSON.stringify(r.value)}` : `run failed with ${codeOf(r)}` };
    },
  },
  {
    id: 6,
    name: 'a throw is fatal: { ok: false }, and nothing of the run acts afterwards',
    async check(h) {
      // The probe's timer would log and fetch this server 50 ms after the throw.
      const { countingServer } = require('./declarations');
      const server = await countingServer();
      try {
        const r = await h.run('throws', { url: server.url });
        await sleep(400);
        const after = h.logs.some((l) => l.worker === 'probe-throws' && l.args.includes('after-throw'));
        const hits = server.stats.requests;
        return { ok: !r.ok && !after && hits === 0, observed: `ok: ${r.ok}; timer after the throw ${after ? 'logged' : 'never logged'}; server hit ${hits} times` };
      } finally {
        await server.close();
      }
    },
  },
  {
    id: 7,
    name: 'statelessness: a module-level counter does not survive, the store does',
    async check(h) {
      const a = await h.run('counter');
      const b = await h.run('counter');
      if (!a.ok || !b.ok) return { ok: false, observed: `run failed: ${(a.error ?? b.error).message}` };
      const ok = a.value.counter === 1 && b.value.counter === 1 && b.value.persisted === a.value.persisted + 1;
      return { ok, observed: `counters ${a.value.counter}, ${b.value.counter}; stored runs ${a.value.persisted}, ${b.value.persisted}` };
    },
  },
  {
    id: 8,
    name: 'the deadline bites: a sleep past ctx.deadline is aborted, signal first',
    async check(h) {
      const t0 = Date.now();
      const r = await h.run('sleeper');
      const took = Date.now() - t0;
      const signalled = h.logs.some((l) => l.worker === 'probe-sleeper' && l.args.includes('signal aborted'));
      // The probe's budget is 1000 ms; 5 s of slack for a loaded machine.
      const ok = !r.ok && r.error.code === 'ERR_PEEK_DEADLINE' && took < 6000 && signalled;
      return { ok, observed: `${codeOf(r)} after ${took} ms; signal ${signalled ? 'aborted' : 'not seen aborting'}` };
    },
  },
  {
    id: 9,
    name: 'the whole api: every granted namespace is there; handlers answer their wake and command',
    async check(h) {
      const tag = `api-${h.nonce}`;
      const main = await h.run('api', { tag });
      if (!main.ok) return { ok: false, observed: `run failed: ${main.error.message}` };
      const v = main.value;
      const missing = Object.entries(v.types).filter(([n, t]) => (n === 'datastore' ? t !== 'undefined' : t === 'undefined'));
      const ping = await h.host.run(h.probe('api'), { kind: 'command', name: 'probe-api-ping', params: { nonce: h.nonce, tag } });
      const wake = await h.host.run(h.probe('api'), { kind: 'wake', topic: 'probe-api/news', message: { tag, n: 1 } });
      const settingsOk = v.settingsFrozen && v.settings.greeting === `hi-${h.nonce}` && v.settings.limit === 3;
      const pingOk = ping.ok && ping.value.pong === h.nonce && ping.value.steps.join() === 'initialize:command,command';
      const wakeOk = wake.ok && wake.value.heard?.n === 1 && wake.value.steps.join() === 'initialize:wake,subscribe:probe-api/news';
      const entryOk = v.steps.join() === 'initialize:command,entry' && v.late === 'ERR_PEEK_LIFECYCLE';
      const ok = missing.length === 0 && settingsOk && pingOk && wakeOk && entryOk;
      return {
        ok,
        observed: [
          missing.length ? `wrong: ${missing.map(([n, t]) => `${n} ${t}`).join(', ')}` : 'every granted namespace present',
          `settings ${JSON.stringify(v.settings)}`,
          `command handler ${ping.ok ? ping.value.steps.join(' → ') : codeOf(ping)}`,
          `wake handler ${wake.ok ? wake.value.steps.join(' → ') : codeOf(wake)}`,
          `entry ${v.steps.join(' → ')}, a late subscribe ${v.late}`,
        ].join('; '),
      };
    },
  },
  {
    id: 10,
    name: 'the lifecycle: initialize → entry → waitUntil work → onShutdown, whose throws fail the run; onShutdown always runs',
    async check(h) {
      const stepsOf = (tag) => h.logs.filter((l) => l.worker === 'probe-api' && l.args[1] === tag).map((l) => l.args[2]);
      const cases = [];
      for (const throwIn of [undefined, 'initialize', 'entry', 'shutdown']) {
        const tag = `lifecycle-${throwIn ?? 'none'}-${h.nonce}`;
        const r = await h.run('api', { tag, throwIn });
        await h.until(() => stepsOf(tag).includes(throwIn === 'shutdown' ? 'shutdown' : 'shutdown-wait'), 2000);
        cases.push({ throwIn, r, steps: stepsOf(tag).join(',') });
      }
      // A hook's own waitUntil work is awaited too ('shutdown-wait').
      const want = {
        none: [true, 'initialize:command,entry,wait,shutdown,shutdown-wait'],
        initialize: [false, 'initialize:command,shutdown,shutdown-wait'],
        entry: [false, 'initialize:command,entry,shutdown,shutdown-wait'],
        shutdown: [false, 'initialize:command,entry,wait,shutdown'],
      };
      const ok = cases.every((c) => {
        const [succeeds, steps] = want[c.throwIn ?? 'none'];
        return c.r.ok === succeeds && c.steps === steps && (succeeds || c.r.error.message.startsWith(c.throwIn));
      });
      return { ok, observed: cases.map((c) => `${c.throwIn ?? 'no throw'}: ${c.r.ok ? 'ok' : c.r.error.message} [${c.steps}]`).join('; ') };
    },
  },
];

/** Assertion 3, the walk: every string reachable from api, the globals, the environment and the parent through /proc. */
async function walkProbe(h, credential) {
  const r = await h.run('walk');
  if (!r.ok) return { ok: false, observed: `run failed: ${r.error.message}` };
  if (!r.value.usedStore) return { ok: false, observed: 'the probe could not use the store, so the credential was not in play' };
  const hits = r.value.strings.filter((s) => s.includes(credential)).length;
  return { ok: hits === 0, observed: `${r.value.strings.length} strings walked, ${hits} contain the credential`, hits };
}

/**
 * Assertion 3, the heap: the run writes a snapshot of its own V8 heap; the
 * harness scans the file for the credential. The snapshot must hold the
 * marker the trigger carried, or the scan proves nothing. A realm with no
 * heap snapshot (workerd) is reported as such, not failed.
 */
async function heapProbe(h, credential) {
  const marker = `peek-heap-marker-${h.nonce}-${Math.random().toString(36).slice(2)}`;
  const r = await h.run('heap', { marker, dir: h.scratch });
  if (!r.ok) return { ok: false, observed: `run failed: ${r.error.message}` };
  const v = r.value;
  if (v.unsupported) return { ok: true, skipped: v.unsupported, observed: `not scanned: ${v.unsupported}` };
  if (!v.usedStore) return { ok: false, observed: 'the probe could not use the store, so the credential was not in play' };
  if (v.error) return { ok: false, observed: v.error };
  let scan;
  // A run that could not write to our directory sent the snapshot itself, gzipped.
  const file = v.gz ? path.join(h.scratch, `probe-heap-${Date.now()}.heapsnapshot`) : v.file;
  try {
    if (v.gz) fs.writeFileSync(file, zlib.gunzipSync(v.gz));
    scan = scanFile(file, [credential, marker]);
  } catch (err) {
    return { ok: false, observed: `the snapshot ${v.file} could not be read: ${err.code ?? err.message}` };
  } finally {
    fs.rmSync(file, { force: true });
  }
  const [hits, markers] = scan.counts;
  const mb = (scan.bytes / 2 ** 20).toFixed(1);
  if (markers === 0) return { ok: false, observed: `the ${mb} MB snapshot does not hold the trigger's marker: the scan cannot be trusted` };
  return { ok: hits === 0, observed: `a ${mb} MB snapshot of the run's process (marker found), ${hits} occurrences of the credential`, hits };
}

/**
 * Counts occurrences of each needle in a file, as it is and JSON-escaped
 * (a heap snapshot is JSON). Strings past V8's snapshot limit (1024
 * characters) are cut there, so a needle is found in any string that holds
 * it within its first 1024 characters.
 * @returns {{ bytes: number, counts: number[] }}
 */
function scanFile(file, needles) {
  const buf = fs.readFileSync(file);
  const counts = needles.map((needle) => {
    const forms = [...new Set([needle, JSON.stringify(needle).slice(1, -1)])].map((f) => Buffer.from(f, 'utf8'));
    let n = 0;
    for (const form of forms) {
      for (let i = buf.indexOf(form); i >= 0; i = buf.indexOf(form, i + form.length)) n++;
    }
    return n;
  });
  return { bytes: buf.length, counts };
}

/** Default way to hand a worker a credential: the environment variable the Node adapter reads. */
function envMint(name, value) {
  const key = credentialEnvName(name);
  const before = process.env[key];
  process.env[key] = value;
  return () => {
    if (before === undefined) delete process.env[key];
    else process.env[key] = before;
  };
}

module.exports = { assertions, envMint, scanFile };
