'use strict';
// Publishing commits, alarm handlers and socket events on their tracing
// channels (./channels.js), and recording them in the host's metrics. Each
// function runs the work itself; with no subscriber it only times it for the
// metrics, and builds no context.
const { performance } = require('node:perf_hooks');
const channels = require('./channels');

/** What a commit carries, counted from the batch the gate handed over. */
function batchShape(batch) {
  let bytes = 0;
  for (const v of batch.values) bytes += v.length;
  const docs = batch.docs;
  if (docs !== undefined) for (const d of docs.docs) bytes += d.length;
  const alarms = batch.alarms;
  return {
    keys: batch.keys.length + batch.deletes.length,
    documents: docs?.ids.length ?? 0,
    alarms: alarms === undefined ? 0 : alarms.names.length + alarms.deletes.length,
    bytes,
  };
}

/**
 * Runs `submit` (one commit of `batch`, resolving with the commit thread's
 * report [id, code, message, queuedMicros, ranMicros]) as a traced commit of
 * the worker; `call` is the traced call it is attributed to, if any, which
 * flushed at `waitedFrom` (performance.now()); `time` the class's
 * commit-latency histogram (ms), if the host keeps metrics.
 * @returns {Promise<unknown>}
 */
function tracedCommit(className, id, batch, call, waitedFrom, time, submit) {
  if (!channels.commit.hasSubscribers) {
    if (time === undefined) return submit();
    const t0 = performance.now();
    return submit().then((r) => {
      time.observe(performance.now() - t0);
      return r;
    });
  }
  const t0 = performance.now();
  // The wait: behind the commit in flight, from when the call's result first
  // needed this one (not known here for a shard's commit: null).
  const waitMs = call === undefined ? 0 : waitedFrom === undefined ? null : Math.max(0, t0 - waitedFrom);
  const ctx = { class: className, id, call, ...batchShape(batch), waitMs, queuedMs: 0, syncMs: 0, durationMs: 0 };
  return channels.commit.tracePromise(
    () =>
      submit().then((r) => {
        ctx.durationMs = performance.now() - t0;
        ctx.queuedMs = r[3] / 1000;
        ctx.syncMs = r[4] / 1000;
        time?.observe(ctx.durationMs);
        return r;
      }),
    ctx,
  );
}

/** Whether anyone subscribes to the commit channel (then commits go through tracedCommit). */
function commitsTraced() {
  return channels.commit.hasSubscribers;
}

/**
 * Runs one alarm's handler (`run`) as a traced alarm firing, and counts it.
 * On a shard (`port.alarmRan`) the host thread is told instead, and counts
 * and publishes it there (alarmRanOnShard).
 * @param {{ metrics?: import('./metrics').Metrics, alarmRan?: (info: object, err?: Error) => void }} port
 * @param {{ name: string, scheduled: number, attempt: number }} a the alarm
 */
async function tracedAlarm(port, className, id, a, run) {
  const lateMs = Date.now() - a.scheduled;
  if (port.alarmRan !== undefined) {
    const t0 = performance.now();
    const info = { className, id, name: a.name, scheduledTime: a.scheduled, attempt: a.attempt, lateMs, durationMs: 0 };
    try {
      const out = await run();
      info.durationMs = performance.now() - t0;
      port.alarmRan(info);
      return out;
    } catch (err) {
      info.durationMs = performance.now() - t0;
      port.alarmRan(info, err);
      throw err;
    }
  }
  try {
    const out = channels.alarm.hasSubscribers
      ? await channels.alarm.tracePromise(async () => run(), { class: className, id, name: a.name, scheduledTime: a.scheduled, attempt: a.attempt, lateMs })
      : await run();
    port.metrics?.alarm(className, undefined, lateMs);
    return out;
  } catch (err) {
    port.metrics?.alarm(className, err, lateMs);
    throw err;
  }
}

/**
 * An alarm handler that ran on a shard, as the shard reported it: counted,
 * and published on the host thread's alarm channel after the fact (start,
 * end, then error if it threw, asyncStart and asyncEnd, one after another).
 */
function alarmRanOnShard(metrics, info, err) {
  metrics.alarm(info.className, err, info.lateMs);
  if (!channels.alarm.hasSubscribers) return;
  const ctx = { class: info.className, id: info.id, name: info.name, scheduledTime: info.scheduledTime, attempt: info.attempt, lateMs: info.lateMs, durationMs: info.durationMs, onShard: true };
  const ch = channels.alarm;
  ch.start.publish(ctx);
  ch.end.publish(ctx);
  if (err !== undefined) {
    ctx.error = err;
    ch.error.publish(ctx);
  }
  ch.asyncStart.publish(ctx);
  ch.asyncEnd.publish(ctx);
}

/** Runs a WebSocket event's handler (`run`) as a traced socket event. */
function tracedSocketEvent(className, id, desc, run) {
  if (!channels.socket.hasSubscribers) return run();
  return channels.socket.tracePromise(async () => run(), { class: className, id, event: desc?.type });
}

module.exports = { tracedCommit, commitsTraced, tracedAlarm, alarmRanOnShard, tracedSocketEvent, batchShape };
