'use strict';
// The eight assertions: the same on every adapter. An adapter that fails one
// is not an adapter of this contract. Each returns { ok, observed }.
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
    name: 'the credential is unreachable from api (recursive walk, toString included)',
    async check(h, options) {
      const credential = `peek-cred-${h.nonce}-${Math.random().toString(36).slice(2)}`;
      const undo = await options.mintCredential('probe-walk', credential);
      try {
        const r = await h.run('walk');
        if (!r.ok) return { ok: false, observed: `run failed: ${r.error.message}` };
        if (!r.value.usedStore) return { ok: false, observed: 'the probe could not use the store, so the credential was not in play' };
        const hits = r.value.strings.filter((s) => s.includes(credential)).length;
        return { ok: hits === 0, observed: `${r.value.strings.length} strings walked, ${hits} contain the credential` };
      } finally {
        await undo?.();
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
];

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

module.exports = { assertions, envMint };
