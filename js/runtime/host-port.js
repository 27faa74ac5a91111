'use strict';
// The port between a worker's runtime (runtime/live.js, shards/remote.js) and
// whoever hosts it: the Host on the host thread (api/host.js builds it), or a
// shard's runtime (shards/runtime.js), which answers the same members with
// messages to the host thread. Types only.

/**
 * @typedef {object} HostPort
 * @property {{ worker(className: string, id: string): object }} native a worker's storage (the native host, or its proxy on a shard)
 * @property {{ submit(run: (cid: number) => Promise<unknown>): Promise<unknown> }} commits the commit threads' queue (runtime/commits.js)
 * @property {import('../shards/pool').ShardPool | null} [pool] host thread only: where remote workers run
 * @property {import('../sockets/websockets').SocketRegistry} [sockets] host thread only: the hibernating sockets
 * @property {number} mailboxLimit calls that may wait in one mailbox (Infinity on a shard: the host thread bounds it)
 * @property {number} [callTimeout] open()'s callTimeout: ms a call or hook may run (./deadline.js); none when undefined
 * @property {(info: { class: string, id: string, reason: 'timeout' | 'abort', method?: string, error: Error }) => void} [reset] a worker was reset
 * @property {(w: object) => void} busy work arrived for `w`: the live set may name others to close
 * @property {(w: object) => void} idle `w` has nothing left to run
 * @property {(w: object) => void} failed `w` failed (its start() threw): it is forgotten
 * @property {(w: object) => object} ctxFor what `w` sees as `this.ctx`
 * @property {(className: string, id: string) => AlarmIndex} alarmIndex one worker's entry in the alarm index
 * @property {(err: unknown, info: object) => void} alarmFailed an alarm handler threw (the host's 'alarmFailed' event)
 */

/**
 * One worker's entry in the catalog's alarm index. Its alarms are written in
 * three steps, so a crash leaves the index early, never late: `earlier`
 * before the worker's file is written, `exact` after (alarms/worker-alarms.js).
 * @typedef {object} AlarmIndex
 * @property {(at: number) => Promise<void>} earlier moves the entry earlier only
 * @property {(at: number) => Promise<void>} exact sets it exactly
 * @property {(at: number) => void} wake tells the alarm schedulers serving the class
 */

module.exports = {};
