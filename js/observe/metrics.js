'use strict';
// The host's metrics, kept always (a few additions per call) and rendered in
// the Prometheus text exposition format by host.metrics().
//
// Labels are the class, the method and the code, and an eviction's reason:
// never the worker id, whose values are unbounded (a monitoring system stores
// one series per label combination). A code is "ok", one of this package's
// ERR_DURABLE_* codes, or "error" for anything a worker threw itself.
const { Histogram } = require('./histogram');
const { codes } = require('../api/errors');

const KNOWN_CODES = new Set(Object.values(codes));

/** The code label of an outcome: ok, a package code, or "error". */
function codeOf(err) {
  if (err === undefined) return 'ok';
  const c = err?.code;
  return typeof c === 'string' && KNOWN_CODES.has(c) ? c : 'error';
}

/** A label value escaped for the exposition format. */
function escapeLabel(v) {
  return String(v).replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}

function labels(pairs) {
  const parts = [];
  for (const [k, v] of pairs) parts.push(`${k}="${escapeLabel(v)}"`);
  return parts.length === 0 ? '' : `{${parts.join(',')}}`;
}

/** A number as the format writes it. */
function num(v) {
  if (v === Infinity) return '+Inf';
  if (v === -Infinity) return '-Inf';
  if (Number.isNaN(v)) return 'NaN';
  return String(v);
}

/** Counters and histograms, each keyed by its label values. */
class Family {
  /**
   * @param {string} name
   * @param {'counter' | 'gauge' | 'histogram'} type
   * @param {string} help
   * @param {string[]} labelNames
   */
  constructor(name, type, help, labelNames) {
    this.name = name;
    this.type = type;
    this.help = help;
    this.labelNames = labelNames;
    /** @type {Map<string, { values: string[], value: number, histogram?: Histogram }>} */
    this.series = new Map();
  }

  /** The series for these label values, made on first use. */
  at(...values) {
    const key = values.join('\u0000');
    let s = this.series.get(key);
    if (s === undefined) {
      s = { values, value: 0, histogram: this.type === 'histogram' ? new Histogram() : undefined };
      this.series.set(key, s);
    }
    return s;
  }

  /** Exposition lines; histograms observed in ms are written in seconds. */
  render(out) {
    out.push(`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} ${this.type}`);
    for (const s of this.series.values()) {
      const pairs = this.labelNames.map((n, i) => [n, s.values[i]]);
      if (this.type !== 'histogram') {
        out.push(`${this.name}${labels(pairs)} ${num(s.value)}`);
        continue;
      }
      const h = s.histogram;
      let cumulative = 0;
      for (let i = 0; i < h.counts.length; i++) {
        cumulative += h.counts[i];
        const le = i < h.bounds.length ? num(h.bounds[i] / 1000) : '+Inf';
        out.push(`${this.name}_bucket${labels([...pairs, ['le', le]])} ${cumulative}`);
      }
      out.push(`${this.name}_sum${labels(pairs)} ${num(h.sum / 1000)}`, `${this.name}_count${labels(pairs)} ${h.count}`);
    }
  }
}

class Metrics {
  #calls = new Family('durable_workers_calls_total', 'counter', 'Calls to workers that ended, by outcome code.', ['class', 'method', 'code']);
  #callTime = new Family('durable_workers_call_duration_seconds', 'histogram', 'Call latency as the caller sees it: queueing, the method, and the commit its result waits for.', ['class', 'method']);
  #refused = new Family('durable_workers_refused_total', 'counter', 'Calls refused before they ran, by code (a full mailbox, a cycle, a closed host, ...).', ['class', 'method', 'code']);
  #commitTime = new Family(
    'durable_workers_commit_duration_seconds',
    'histogram',
    "Commits of a worker's writes, from the hand-off to a commit thread until landed (synced under durability 'full').",
    ['class'],
  );
  #alarms = new Family('durable_workers_alarms_total', 'counter', 'Alarm handlers run, by outcome code.', ['class', 'code']);
  #lateness = new Family('durable_workers_alarm_lateness_seconds', 'histogram', "How long after its time an alarm's handler started.", ['class']);
  #evictions = new Family('durable_workers_evictions_total', 'counter', "Workers closed by eviction, by reason ('evicted': past maxLive; 'idle': past evictAfter).", ['class', 'reason']);
  #resets = new Family('durable_workers_resets_total', 'counter', "Workers reset, by reason ('timeout': a call or hook overran its deadline; 'abort': ctx.abort()).", ['class', 'reason']);
  #shardLosses = new Family('durable_workers_shard_losses_total', 'counter', 'Shards lost (crashed, stalled past their heartbeat, or out of memory).', []);

  constructor() {
    this.#shardLosses.at(); // 0 until a loss, rather than absent
  }

  /**
   * The series a call of `className.method` records into, cached by the
   * caller (the class's binding) so a call does no map lookups.
   */
  callSeries(className, method) {
    const time = this.#callTime.at(className, method).histogram;
    const ok = this.#calls.at(className, method, 'ok');
    const failed = (code) => this.#calls.at(className, method, code);
    return {
      ok(ms) {
        ok.value++;
        time.observe(ms);
      },
      failed(err, ms) {
        failed(codeOf(err)).value++;
        time.observe(ms);
      },
    };
  }

  /** A call refused before it ran. */
  refused(className, method, err) {
    this.#refused.at(className, method, codeOf(err)).value++;
  }

  /** The histogram a class's commits record into (ms). */
  commitSeries(className) {
    return this.#commitTime.at(className).histogram;
  }

  /** One alarm handler ran; `lateMs` after its time. */
  alarm(className, err, lateMs) {
    this.#alarms.at(className, codeOf(err)).value++;
    this.#lateness.at(className).histogram.observe(Math.max(0, lateMs));
  }

  evicted(className, reason) {
    this.#evictions.at(className, reason).value++;
  }

  reset(className, reason) {
    this.#resets.at(className, reason).value++;
  }

  shardLost() {
    this.#shardLosses.at().value++;
  }

  /** p50 and p99 of every call so far (ms), or null before the first. */
  latency() {
    // Summed here, when top asks, rather than kept beside each series on every call.
    const all = new Histogram();
    for (const s of this.#callTime.series.values()) all.add(s.histogram);
    if (all.count === 0) return null;
    return { p50: all.quantile(0.5), p99: all.quantile(0.99), count: all.count };
  }

  /**
   * The exposition text. `now` holds what is read at scrape time: counters
   * kept by the storage core and gauges of what is open.
   * @param {{ syncs: number, bytesWritten: number, commits: number, live: Map<string, number>,
   *   waiting: Map<string, number>, sockets: number }} now
   */
  render(now) {
    const out = [];
    const gauge = (name, help, labelName, map) => {
      const f = new Family(name, 'gauge', help, labelName === null ? [] : [labelName]);
      if (labelName === null) f.at().value = map;
      else for (const [k, v] of map) f.at(k).value = v;
      f.render(out);
    };
    const counter = (name, help, value) => {
      const f = new Family(name, 'counter', help, []);
      f.at().value = value;
      f.render(out);
    };
    this.#calls.render(out);
    this.#callTime.render(out);
    this.#refused.render(out);
    this.#commitTime.render(out);
    counter('durable_workers_syncs_total', 'File syncs (fsync/fdatasync) of worker files and the catalog.', now.syncs);
    counter('durable_workers_written_bytes_total', 'Bytes written to worker files.', now.bytesWritten);
    gauge('durable_workers_live_workers', 'Workers open now.', 'class', now.live);
    gauge('durable_workers_mailbox_waiting', 'Entries waiting in the mailboxes of open workers, behind the one running.', 'class', now.waiting);
    gauge('durable_workers_sockets', 'Hibernatable WebSockets open.', null, now.sockets);
    this.#alarms.render(out);
    this.#lateness.render(out);
    this.#evictions.render(out);
    this.#resets.render(out);
    this.#shardLosses.render(out);
    return `${out.join('\n')}\n`;
  }
}

module.exports = { Metrics };
