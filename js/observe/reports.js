'use strict';
// The host's reports of what happened to its workers: each is counted (for
// stats()), recorded in the metrics, published on its diagnostics channel
// when anyone listens, and emitted as the host's event.
const channels = require('./channels');

/**
 * @param {import('node:events').EventEmitter} host emits 'evicted', 'shardLost', 'alarmFailed', 'reset'
 * @param {{ alarmsFailed: number, resets: number }} counts the host's stats() counters
 * @param {import('./metrics').Metrics} metrics
 */
function hostReports(host, counts, metrics) {
  return {
    /** A worker closed to make room, or idle. */
    evicted(info) {
      metrics.evicted(info.class, info.reason);
      if (channels.evict.hasSubscribers) channels.evict.publish(info);
      host.emit('evicted', info);
    },
    /** A shard crashed, stalled or ran out of memory. */
    shardLost(err, info) {
      metrics.shardLost();
      if (channels.shard.hasSubscribers) channels.shard.publish({ event: 'lost', shard: info.shard, error: err });
      host.emit('shardLost', err, info);
    },
    /** An alarm handler threw (or overran its deadline); it will be retried. */
    alarmFailed(err, info) {
      counts.alarmsFailed++;
      host.emit('alarmFailed', err, info);
    },
    /**
     * A worker was reset: `{ class, id, reason: 'timeout' | 'abort', method?, error }`.
     * Emitted from a microtask: it happens inside the worker's mailbox, which a throwing listener must not stop.
     */
    reset(info) {
      counts.resets++;
      metrics.reset(info.class, info.reason);
      if (channels.reset.hasSubscribers) channels.reset.publish(info);
      queueMicrotask(() => host.emit('reset', info));
    },
  };
}

module.exports = { hostReports };
