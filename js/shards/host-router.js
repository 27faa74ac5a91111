'use strict';
// Messages from the shards, on the host thread: a call made by code on a
// shard (checked, and its wait recorded, as if made here), a wake for the
// alarm schedulers, a failed alarm, a socket's operations, the alarm index's
// writes, and a worker's own storage requests, which go to its RemoteWorker.
// And a lost shard: its workers' callers hear ERR_DURABLE_SHARD_LOST.
const { DurableError, codes, label, fromNative } = require('../api/errors');
const { checkWorkerId } = require('../api/rules');
const { NO_GATE } = require('./remote');
const { OP, serializeError, deserializeError, isSocketMarker } = require('./protocol');

/**
 * @typedef {object} RouterPort what the router needs of the host
 * @property {(binding: object, id: string, who: string, method: string, args: unknown[], caller?: object, timeout?: number) => Promise<unknown>} call
 * @property {(Class: Function) => object} bind
 * @property {(name: string) => Function | undefined} classNamed a class this host knows or the shard module exports
 * @property {import('../sockets/websockets').SocketRegistry} sockets
 * @property {object} native the native host (the alarm index's writes)
 * @property {(className: string, at: number) => void} wake
 * @property {(err: unknown, info: object) => void} alarmFailed
 * @property {(info: object, err: Error | undefined) => void} alarmRan an alarm handler ran on a shard
 * @property {(id: number | undefined) => object | undefined} traceOf a traced call by its id
 * @property {(err: Error, info: { shard: number }) => void} lost
 * @property {(info: object) => void} reset a worker on a shard was reset (the host's 'reset' report)
 */

/**
 * The handlers a ShardPool calls: `message(shard, msg)` and `lost(shard, err)`.
 * @param {RouterPort} port
 */
function shardRouter(port) {
  /** A call made by code on a shard. */
  function callFromShard(shard, { cid, className, id, method, args, frame }) {
    const reply = (ok, v) => shard.post(ok ? { op: OP.callReply, cid, ok, value: v } : { op: OP.callReply, cid, ok, error: serializeError(v) });
    let p;
    try {
      const Class = port.classNamed(className);
      if (Class === undefined) {
        throw new DurableError(codes.NAME, `${label(className, String(id))}: class ${className} is not known to this host; call host.get(${className}, …) once, or export it from the shard module`);
      }
      const binding = port.bind(Class);
      checkWorkerId(binding.name, id);
      const caller =
        frame?.chain === undefined ? undefined : { key: frame.key, chain: frame.chain, keys: frame.keys, worker: { state: NO_GATE }, trace: port.traceOf(frame.trace), deadline: frame.deadline };
      const real = args.map((a) => (isSocketMarker(a) ? port.sockets.fromMarker(a) : a));
      p = port.call(binding, id, label(binding.name, id), method, real, caller, frame?.timeout);
    } catch (err) {
      p = Promise.reject(err);
    }
    p.then(
      (v) => reply(true, v),
      (err) => reply(false, err),
    );
  }

  return {
    message(shard, msg) {
      switch (msg.op) {
        case OP.call:
          return callFromShard(shard, msg);
        case OP.wake:
          return port.wake(msg.className, msg.at);
        case OP.alarmFailed:
          return port.alarmFailed(deserializeError(msg.error), msg.info);
        case OP.reset:
          return port.reset({ ...msg.info, error: deserializeError(msg.info.error) });
        case OP.alarmRan:
          return port.alarmRan(msg, msg.error === undefined ? undefined : deserializeError(msg.error));
        case OP.socketAccept:
        case OP.socketSend:
        case OP.socketClose:
        case OP.socketAttach:
        case OP.socketAuto:
        case OP.socketBroadcast:
          return port.sockets.fromShard(msg.op === OP.socketAccept ? shard.workers.get(msg.key) : undefined, msg);
        case OP.rpc:
          if (msg.key === null) {
            const [className, id, at] = msg.args;
            const write = msg.method === 'alarmEarlier' ? port.native.alarmEarlier(className, id, at) : port.native.alarmExact(className, id, at);
            write.then(
              () => shard.post({ op: OP.reply, rid: msg.rid, ok: true }),
              (err) => shard.post({ op: OP.reply, rid: msg.rid, ok: false, error: serializeError(fromNative(err, label(className, id))) }),
            );
            return;
          }
        // falls through: a worker's own storage
        default:
          shard.workers.get(msg.key)?.onMessage(shard, msg);
      }
    },

    lost(shard, err) {
      for (const w of shard.workers.values()) w.lost(err);
      shard.workers.clear();
      port.lost(err, { shard: shard.index });
    },
  };
}

module.exports = { shardRouter };
