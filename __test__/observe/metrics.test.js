'use strict';
// host.metrics(): the Prometheus text exposition format, read back with the
// Prometheus project's own parser (helpers/prometheus.js), not with regexes;
// every family named by the docs is there with the values the calls made.
const ava = require('ava');
const path = require('node:path');
const { parseExposition, unavailable } = require('../helpers/prometheus');
const { open } = require('../..');
const { Inner, Outer, Ringer } = require('../fixtures/observe-workers');
const { tmpDir } = require('../helpers/tmp');
const { until } = require('../helpers/poll');

const MODULE = path.join(__dirname, '..', 'fixtures', 'observe-workers.js');

const why = unavailable();
const test = why === null ? ava : ava.skip;
if (why !== null) ava.skip(`host.metrics() is checked with the Prometheus parser: ${why}`, () => {});

async function openHost(t, options = {}) {
  const host = await open({ dir: tmpDir(t), ...options });
  t.teardown(() => host.close());
  return host;
}

/** The parsed families by the name the text gives them (a counter's with its _total). */
function families(text) {
  const out = new Map();
  for (const f of parseExposition(text)) out.set(f.type === 'counter' ? `${f.name}_total` : f.name, f);
  return out;
}

/**
 * The sample of `family` whose labels include `labels`: a counter's or a
 * gauge's { value }, a histogram's { count, sum, buckets: { le: count } }.
 */
function sample(fams, family, labels = {}) {
  const f = fams.get(family);
  if (f === undefined) return undefined;
  const matches = (s) => Object.entries(labels).every(([k, v]) => s.labels[k] === v);
  const own = f.samples.filter(matches);
  if (f.type !== 'histogram') return own.find((s) => s.name === family);
  if (own.length === 0) return undefined;
  const count = own.find((s) => s.name === `${family}_count`)?.value;
  const sum = own.find((s) => s.name === `${family}_sum`)?.value;
  const buckets = Object.fromEntries(own.filter((s) => s.name === `${family}_bucket`).map((s) => [s.labels.le, s.value]));
  return { count, sum, buckets };
}

test('calls, latencies, refusals, commits, syncs, bytes, gauges: every family, labelled by class, method and code', async (t) => {
  const host = await openHost(t, { maxLive: 2, mailbox: 1 });
  for (let i = 0; i < 5; i++) await host.get(Inner, 'a').write(i);
  await host.get(Outer, 'o').relay('b', 1);
  await t.throwsAsync(host.get(Inner, 'a').fail());
  await t.throwsAsync(host.get(Inner, 'a').missing(), { code: 'ERR_DURABLE_METHOD' });
  // A full mailbox: one running, one waiting, the rest refused.
  const burst = await Promise.allSettled(Array.from({ length: 6 }, (_, i) => host.get(Inner, 'c').write(i)));
  const busy = burst.filter((r) => r.status === 'rejected' && r.reason.code === 'ERR_DURABLE_BUSY').length;
  t.true(busy > 0, 'some calls were refused as busy');

  const text = host.metrics();
  t.regex(text, /\n$/);
  const fams = families(text);
  for (const name of [
    'durable_workers_calls_total',
    'durable_workers_call_duration_seconds',
    'durable_workers_refused_total',
    'durable_workers_commit_duration_seconds',
    'durable_workers_syncs_total',
    'durable_workers_written_bytes_total',
    'durable_workers_live_workers',
    'durable_workers_mailbox_waiting',
    'durable_workers_sockets',
    'durable_workers_alarms_total',
    'durable_workers_alarm_lateness_seconds',
    'durable_workers_evictions_total',
    'durable_workers_shard_losses_total',
  ]) {
    t.true(fams.has(name), `${name} is exposed`);
  }
  t.is(fams.get('durable_workers_calls_total').type, 'counter');
  t.is(fams.get('durable_workers_call_duration_seconds').type, 'histogram');
  t.is(fams.get('durable_workers_live_workers').type, 'gauge');
  t.is(Number(sample(fams, 'durable_workers_calls_total', { class: 'Inner', method: 'write', code: 'ok' }).value), 5 + 1 + 6 - busy);
  t.is(Number(sample(fams, 'durable_workers_calls_total', { class: 'Inner', method: 'fail', code: 'error' }).value), 1);
  t.is(Number(sample(fams, 'durable_workers_refused_total', { class: 'Inner', method: 'missing', code: 'ERR_DURABLE_METHOD' }).value), 1);
  t.is(Number(sample(fams, 'durable_workers_refused_total', { class: 'Inner', method: 'write', code: 'ERR_DURABLE_BUSY' }).value), busy);
  const latency = sample(fams, 'durable_workers_call_duration_seconds', { class: 'Inner', method: 'write' });
  t.is(Number(latency.count), 5 + 1 + 6 - busy);
  t.true(Number(latency.sum) > 0);
  t.is(Number(latency.buckets['+Inf']), Number(latency.count), 'the +Inf bucket holds every call');
  const commits = sample(fams, 'durable_workers_commit_duration_seconds', { class: 'Inner' });
  t.true(Number(commits.count) >= 3, `commits ${commits.count}`);
  t.true(Number(sample(fams, 'durable_workers_syncs_total').value) >= Number(commits.count));
  t.true(Number(sample(fams, 'durable_workers_written_bytes_total').value) > 0);
  t.is(Number(sample(fams, 'durable_workers_live_workers', { class: 'Inner' }).value) + Number(sample(fams, 'durable_workers_live_workers', { class: 'Outer' })?.value ?? 0) <= 2, true);
  t.true(Number(sample(fams, 'durable_workers_evictions_total', { class: 'Inner', reason: 'evicted' })?.value ?? 0) >= 1);
  // Never a worker id: no label is named id, and no value is one of them.
  for (const f of fams.values()) {
    for (const m of f.samples) {
      t.false(Object.hasOwn(m.labels, 'id'), `${f.name} has an id label`);
      for (const v of Object.values(m.labels)) t.false(['a', 'b', 'c', 'o'].includes(v), `${f.name} carries a worker id (${v})`);
    }
  }
});

test('alarms: counted by outcome, their lateness a histogram', async (t) => {
  const host = await openHost(t);
  const alarms = await host.startAlarms({ classes: [Ringer] });
  t.teardown(() => alarms.stop());
  await host.get(Ringer, 'r').ring(10, 'good');
  await host.get(Ringer, 'r').ring(10, 'bad');
  const count = (code) => Number(sample(families(host.metrics()), 'durable_workers_alarms_total', { class: 'Ringer', code })?.value ?? 0);
  await until(
    () => count('ok') >= 2 && count('error') >= 1,
    20_000,
    () => host.metrics(),
  );
  const late = sample(families(host.metrics()), 'durable_workers_alarm_lateness_seconds', { class: 'Ringer' });
  t.is(Number(late.count), count('ok') + count('error'));
});

test('a label value with quotes, backslashes and newlines is escaped as the format says', async (t) => {
  const host = await openHost(t);
  class Odd extends Inner {
    static workerName = 'Odd';
    async ['we"ird\\name\n'](n) {
      return this.write(n);
    }
  }
  await host.get(Odd, 'x')['we"ird\\name\n'](1);
  const s = sample(families(host.metrics()), 'durable_workers_calls_total', { class: 'Odd', method: 'we"ird\\name\n' });
  t.is(Number(s?.value), 1);
});

test('on shards: calls and commits counted on the host, and a shard loss', async (t) => {
  const host = await openHost(t, { shards: { count: 1, module: MODULE } });
  host.on('shardLost', () => {});
  const { Outer: SOuter } = require(MODULE);
  await host.get(SOuter, 's').relay('si', 2);
  await t.throwsAsync(host.get(SOuter, 's').exitThread(), { code: 'ERR_DURABLE_SHARD_LOST' });
  const fams = families(host.metrics());
  t.is(Number(sample(fams, 'durable_workers_calls_total', { class: 'Inner', method: 'write', code: 'ok' }).value), 1);
  t.true(Number(sample(fams, 'durable_workers_commit_duration_seconds', { class: 'Inner' }).count) >= 1);
  t.is(Number(sample(fams, 'durable_workers_shard_losses_total').value), 1);
  t.is(Number(sample(fams, 'durable_workers_calls_total', { class: 'Outer', method: 'exitThread', code: 'ERR_DURABLE_SHARD_LOST' }).value), 1);
});
