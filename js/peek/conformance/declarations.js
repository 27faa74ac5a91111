'use strict';
// The declaration checks: each field of the adapter's AdapterDeclaration is
// tested for truth, not for a preferred answer. A scheduler that declares
// catchesUpMissedRuns: false passes when a missed run never happens; one
// that declares true passes only if it does happen. Each returns
// { ok, observed }; a check the adapter cannot support here says so and fails.
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
const { randomUUID } = require('node:crypto');
const { sleep, PROBES } = require('./harness');

/** Where the stamp and fresh probes keep their isolate's nonce (on globalThis, which outlives a module graph). */
const ISOLATE = Symbol.for('durable-workers.peek.isolate');

const unsupported = (what) => ({ ok: false, observed: `cannot check: the adapter has no ${what}()` });

/** A local HTTP server that counts requests, and how many were open at once. */
async function countingServer({ holdUntil = 0, holdMs = 0 } = {}) {
  const stats = { requests: 0, open: 0, maxOpen: 0 };
  const held = [];
  const server = http.createServer((req, res) => {
    stats.requests++;
    stats.open++;
    stats.maxOpen = Math.max(stats.maxOpen, stats.open);
    const finish = () => {
      stats.open--;
      res.end('ok');
    };
    if (holdUntil > 0) {
      held.push(finish);
      if (held.length >= holdUntil) held.splice(0).forEach((f) => f());
      else {
        setTimeout(() => {
          const i = held.indexOf(finish);
          if (i >= 0) {
            held.splice(i, 1);
            finish();
          }
        }, holdMs).unref();
      }
    } else finish();
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${server.address().port}/probe`;
  return { url, stats, close: () => new Promise((resolve) => server.close(resolve)) };
}

/** Schedules a probe and returns what is needed to watch and undo it. */
async function scheduled(h, name, spec) {
  const since = Date.now();
  await h.adapter.ensureSchedule(h.probe(name), spec);
  return { since, cancel: () => h.adapter.cancelSchedule(h.probe(name)) };
}

const declarations = [
  {
    field: 'name',
    async check(h, d) {
      return { ok: typeof d.name === 'string' && d.name.length > 0, observed: JSON.stringify(d.name) };
    },
  },
  {
    field: 'isolation',
    async check(h, d) {
      const a = await h.run('stamp');
      const b = await h.run('stamp');
      if (!a.ok || !b.ok) return { ok: false, observed: `run failed: ${(a.error ?? b.error).message}` };
      const pids = `runs in pids ${a.value.pid}, ${b.value.pid}; host ${process.pid}`;
      globalThis[ISOLATE] ??= randomUUID();
      const short = (n) => String(n).slice(0, 8);
      if (d.isolation === 'process-per-run') {
        // By isolate, not pid: a run in a PID namespace of its own (the Node
        // adapter's sandbox) has the same small pid as the one before it.
        const [x, y] = [a, b].map((r) => r.value.isolate);
        const ok = typeof x === 'string' && x !== y && x !== globalThis[ISOLATE] && y !== globalThis[ISOLATE];
        return { ok, observed: `${pids}; isolates ${short(x)}, ${short(y)}; host ${short(globalThis[ISOLATE])}` };
      }
      if (d.isolation === 'shared-process') return { ok: a.value.pid === process.pid && b.value.pid === process.pid, observed: pids };
      if (d.isolation === 'isolate-per-worker') {
        // Two runs of one worker (stamp) and a run of another (fresh): the
        // other worker's isolate is not stamp's, and none is the host's.
        const c = await h.run('fresh');
        if (!c.ok) return { ok: false, observed: `run failed: ${c.error.message}` };
        const mine = globalThis[ISOLATE];
        const [x, y, z] = [a, b, c].map((r) => r.value.isolate);
        const ok = typeof x === 'string' && typeof z === 'string' && x !== z && y !== z && ![x, y, z].includes(mine);
        return { ok, observed: `isolates: stamp ${short(x)}, ${short(y)}; fresh ${short(z)}; host ${short(mine)}` };
      }
      return { ok: false, observed: `${d.isolation} cannot be observed from here (${pids})` };
    },
  },
  {
    field: 'scheduler.retriesOnFailure, scheduler.atLeastOnce',
    async check(h, d) {
      if (!h.adapter.ensureSchedule) return unsupported('ensureSchedule');
      const retries = d.scheduler.retriesOnFailure === 'none' ? 0 : d.scheduler.retriesOnFailure;
      if (typeof retries !== 'number') return { ok: false, observed: `${retries}: nothing to count against` };
      const s = await scheduled(h, 'fails', 'every 1s');
      try {
        // Every retry of the first slot, then one run of a later slot: that
        // later run is what shows the retries have ended.
        let backoff = 0;
        for (let i = 1; i <= retries; i++) backoff += Math.min(1000 * 2 ** (i - 1), 300_000);
        const runs = () => h.runsOf('fails', s.since);
        await h.until(
          () => {
            const r = runs();
            return r.length > 0 && r.some((x) => x.trigger.scheduledFor !== r[0].trigger.scheduledFor);
          },
          1000 + backoff * 1.5 + 8000,
        );
        const r = runs();
        if (r.length === 0) return { ok: false, observed: 'the schedule never ran' };
        const first = r.filter((x) => x.trigger.scheduledFor === r[0].trigger.scheduledFor).length;
        const later = r.length > first;
        const ok = later && first === 1 + retries && (d.scheduler.atLeastOnce ? first > 1 || retries === 0 : first === 1);
        return { ok, observed: `${first} runs for one scheduledFor (1 + ${first - 1} retries)${later ? ', then the next slot' : ', and no later slot seen'}` };
      } finally {
        await s.cancel();
      }
    },
  },
  {
    field: 'scheduler.precisionMs, scheduler.minIntervalMs',
    async check(h, d) {
      if (!h.adapter.ensureSchedule) return unsupported('ensureSchedule');
      const seconds = Math.max(1, Math.ceil(d.scheduler.minIntervalMs / 1000));
      const s = await scheduled(h, 'stamp', `every ${seconds}s`);
      try {
        const want = 4;
        await h.until(() => h.runsOf('stamp', s.since).filter((r) => r.trigger.kind === 'schedule').length >= want, seconds * 1000 * (want + 2) + 5000);
        const r = h.runsOf('stamp', s.since).filter((x) => x.trigger.kind === 'schedule' && x.result.ok);
        if (r.length < want) return { ok: false, observed: `${r.length} of ${want} scheduled runs happened` };
        const late = r.map((x) => x.result.value.startedAt - x.trigger.scheduledFor).sort((a, b) => a - b);
        const gaps = r.slice(1).map((x, i) => x.trigger.scheduledFor - r[i].trigger.scheduledFor);
        const ok = late[0] >= -50 && late[late.length - 1] <= d.scheduler.precisionMs && gaps.every((g) => g >= d.scheduler.minIntervalMs);
        return {
          ok,
          observed: `start − scheduledFor over ${late.length} runs: min ${late[0]} ms, median ${late[late.length >> 1]} ms, max ${late[late.length - 1]} ms; slots ${gaps.join(', ')} ms apart`,
        };
      } finally {
        await s.cancel();
      }
    },
  },
  {
    field: 'scheduler.catchesUpMissedRuns',
    async check(h, d) {
      if (!h.adapter.stop || !h.adapter.start) return unsupported('stop/start');
      // The shortest interval the adapter allows, stopped across three of its
      // due times: catching up is one run for the outage, not one per slot
      // missed, and not none.
      const seconds = Math.max(1, Math.ceil(d.scheduler.minIntervalMs / 1000));
      const intervalMs = seconds * 1000;
      const s = await scheduled(h, 'stamp', `every ${seconds}s`);
      try {
        await h.adapter.stop();
        await sleep(s.since + 3.5 * intervalMs - Date.now());
        const restart = Date.now();
        await h.adapter.start();
        const missed = () => h.runsOf('stamp', restart).filter((x) => x.trigger.kind === 'schedule' && x.trigger.scheduledFor < restart);
        // Wait for the first run of a slot after the restart: any further
        // catch-up run (a replay of the other missed slots) is due before it.
        await h.until(() => h.runsOf('stamp', restart).some((x) => x.trigger.kind === 'schedule' && x.trigger.scheduledFor >= restart), 2 * intervalMs + d.scheduler.precisionMs + 3000);
        const caught = missed();
        const slots = Math.floor((restart - s.since) / intervalMs);
        const ok = d.scheduler.catchesUpMissedRuns ? caught.length === 1 : caught.length === 0;
        return {
          ok,
          observed: `every ${seconds}s, stopped across ${slots} due times: ${caught.length} run(s) for missed slots${caught.length ? `, ${caught.map((x) => restart - x.trigger.scheduledFor).join(', ')} ms overdue at restart` : ''}`,
        };
      } finally {
        await s.cancel();
      }
    },
  },
  {
    field: 'run.singleFlight',
    async check(h, d) {
      if (!h.adapter.dispatch) return unsupported('dispatch');
      const trigger = { kind: 'command', name: 'probe-overlap', params: {} };
      const rs = await Promise.all([1, 2, 3].map(() => h.adapter.dispatch(h.probe('overlap'), trigger)));
      if (rs.some((r) => !r.ok)) return { ok: false, observed: `run failed: ${rs.find((r) => !r.ok).error.message}` };
      const spans = rs.map((r) => r.value).sort((a, b) => a.start - b.start);
      const overlaps = spans.slice(1).filter((s, i) => s.start < spans[i].end).length;
      return { ok: d.run.singleFlight ? overlaps === 0 : true, observed: `3 triggers at once: ${overlaps} overlapping runs` };
    },
  },
  {
    field: 'run.clockAdvancesWithoutIo',
    async check(h, d) {
      const r = await h.run('busy', { iterations: 3e7 });
      if (!r.ok) return { ok: false, observed: `run failed: ${r.error.message}` };
      const advanced = r.value.advancedMs > 0;
      return { ok: advanced === d.run.clockAdvancesWithoutIo, observed: `Date.now() moved ${r.value.advancedMs} ms across a synchronous loop` };
    },
  },
  {
    field: 'run.maxCpuMs',
    async check(h, d) {
      // 'unbounded': a run may burn CPU for most of its wall clock and is not
      // cut short. A number: a run burning longer than it is stopped.
      const spinMs = d.run.maxCpuMs === 'unbounded' ? 1500 : d.run.maxCpuMs + 1000;
      const r = await h.run('busy', { iterations: 0, spinMs });
      const ok = d.run.maxCpuMs === 'unbounded' ? r.ok && r.value.spunMs >= spinMs : !r.ok;
      return { ok, observed: r.ok ? `a ${r.value.spunMs} ms synchronous spin completed` : `a ${spinMs} ms spin was stopped: ${r.error.code}` };
    },
  },
  {
    field: 'run.maxWallClockMs',
    async check(h, d) {
      // The stamp probe asks for a far longer budget than any adapter gives.
      const t0 = Date.now();
      const r = await h.run('stamp');
      if (!r.ok) return { ok: false, observed: `run failed: ${r.error.message}` };
      // The run started between t0 and the entry's first line (startedAt):
      // its deadline is at most max after the latter, at least max - 5 s after t0.
      const budget = r.value.deadline - t0;
      const ok = r.value.deadline <= r.value.startedAt + d.run.maxWallClockMs && budget > d.run.maxWallClockMs - 5000;
      return { ok, observed: `a run asking for 2^31 ms got a deadline ${budget} ms after it was asked for (${r.value.deadline - r.value.startedAt} ms after the entry began)` };
    },
  },
  {
    field: 'run.memoryMb',
    async check(h, d) {
      if (d.run.memoryMb === 'unbounded') {
        const r = await h.run('alloc', { mb: 256 });
        return { ok: r.ok, observed: r.ok ? '256 MB held' : `256 MB refused: ${r.error.code}` };
      }
      const under = await h.run('alloc', { mb: Math.floor(d.run.memoryMb / 2) });
      const over = await h.run('alloc', { mb: d.run.memoryMb * 2 });
      return {
        ok: under.ok && !over.ok,
        observed: `${Math.floor(d.run.memoryMb / 2)} MB: ${under.ok ? 'held' : under.error.code}; ${d.run.memoryMb * 2} MB: ${over.ok ? 'held' : over.error.code}`,
      };
    },
  },
  {
    field: 'run.maxOutboundConcurrency',
    async check(h, d) {
      const limit = d.run.maxOutboundConcurrency;
      const n = limit === 'unbounded' ? 8 : limit + 2;
      // Requests are held until n are open at once (or 3 s pass).
      const server = await countingServer({ holdUntil: n, holdMs: 3000 });
      try {
        const r = await h.run('fanout', { url: server.url, n });
        if (!r.ok) return { ok: false, observed: `run failed: ${r.error.message}` };
        const ok = limit === 'unbounded' ? server.stats.maxOpen === n : server.stats.maxOpen <= limit;
        return { ok, observed: `${n} fetches at once: ${server.stats.maxOpen} were in flight together` };
      } finally {
        await server.close();
      }
    },
  },
  {
    field: 'network.enforcement',
    async check(h, d) {
      const server = await countingServer();
      try {
        const r = await h.run('escape', { url: server.url });
        if (!r.ok) return { ok: false, observed: `run failed: ${r.error.message}` };
        const reached = server.stats.requests > 0;
        const ok = reached === (d.network.enforcement === 'guard-rail');
        const t = r.value;
        return {
          ok,
          observed: `import node:http: ${t.import}; fetch: ${t.fetch}; require node:http: ${t.require}; ${t.net === undefined ? '' : `node:net: ${t.net}; `}server ${reached ? 'reached' : 'not reached'}`,
        };
      } finally {
        await server.close();
      }
    },
  },
  {
    field: 'install.codeLoad',
    async check(h, d) {
      // A worker that did not exist when the host started, then changed.
      const dir = path.join(h.scratch, 'installed');
      fs.mkdirSync(dir, { recursive: true });
      fs.copyFileSync(path.join(PROBES, 'package.json'), path.join(dir, 'package.json'));
      const manifest = path.join(dir, 'manifest.json');
      fs.writeFileSync(manifest, JSON.stringify({ name: `probe-installed-${h.nonce}`, worker: { url: 'version.js' } }));
      const source = fs.readFileSync(path.join(PROBES, 'version.js'), 'utf8');
      fs.writeFileSync(path.join(dir, 'version.js'), source);
      const trigger = { kind: 'command', name: 'version', params: {} };
      const first = await h.host.run(manifest, trigger);
      fs.writeFileSync(path.join(dir, 'version.js'), source.replace('VERSION = 1', 'VERSION = 2'));
      const second = await h.host.run(manifest, trigger);
      const seen = [first, second].map((r) => (r.ok ? r.value : r.error.code));
      const runtime = seen[0] === 1 && seen[1] === 2;
      return { ok: runtime === (d.install.codeLoad === 'runtime'), observed: `installed and run: ${seen[0]}; edited and run again: ${seen[1]} (no restart)` };
    },
  },
];

module.exports = { declarations, countingServer };
