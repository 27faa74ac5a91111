'use strict';
// The diagnostics channels this package publishes on (node:diagnostics_channel),
// the convention Node itself, undici and fastify use: a tracer, a logger or
// the OpenTelemetry adapter (./otel.js) subscribes by name, and with no
// subscriber nothing is built or published (every site checks
// `hasSubscribers` first).
//
// Tracing channels (start, end, asyncStart, asyncEnd, error):
//   durable-workers:call    a call to a worker, as its caller sees it: from the
//                           stub call to the result released by the gate
//   durable-workers:commit  one commit of a worker's writes, handed to a
//                           commit thread until it has landed (synced)
//   durable-workers:alarm   one alarm's handler
//   durable-workers:socket  one hibernatable WebSocket event's handler
// Channels:
//   durable-workers:evict   a worker closed to make room, or idle
//   durable-workers:shard   a shard started or was lost
//   durable-workers:reset   a worker reset: a call or hook overran its deadline, or ctx.abort()
//
// Events of workers on shards are published here, on the host thread. The
// payloads are described in docs/operating.md.
const dc = require('node:diagnostics_channel');

const call = dc.tracingChannel('durable-workers:call');
const commit = dc.tracingChannel('durable-workers:commit');
const alarm = dc.tracingChannel('durable-workers:alarm');
const socket = dc.tracingChannel('durable-workers:socket');
const evict = dc.channel('durable-workers:evict');
const shard = dc.channel('durable-workers:shard');
const reset = dc.channel('durable-workers:reset');

module.exports = { call, commit, alarm, socket, evict, shard, reset };
