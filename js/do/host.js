'use strict';
// Durable Object classes on this engine, in process: one durable directory,
// one namespace per binding, the classes constructed as Cloudflare
// constructs them. `serve` builds on this.

const path = require('node:path');
const { Commits } = require('../runtime/commits');
const { openNative } = require('../runtime/open-native');
const { archive: archiveOption } = require('../api/options');
const { takeSnapshot } = require('../tools/backup');
const { DurableObjectNamespace, kClose } = require('./namespace');
const { wranglerUniqueKey } = require('./ids');
const { ObjectAlarms } = require('./alarms');
const { OpenFiles } = require('./open-files');
const { installTimerAccounting } = require('./timers');
const { Residents } = require('./residents');
const { DurableError, codes } = require('../api/errors');
const { CONTROL_VIEW } = require('../api/host');

/**
 * Object files kept open at most (about three descriptors each): past it the
 * least recently used idle ones are parked (./open-files.js). Far under the
 * 1,024 descriptors a process gets by default on Linux.
 */
const DEFAULT_MAX_OPEN_FILES = 128;

/**
 * Opens `dir` and binds each class: `env[binding]` is its namespace. Alarms
 * already due in `dir` fire at once; the others when due (./alarms.js).
 * @param {{ dir: string, name?: string, bindings: Record<string, { class: Function, sql?: boolean, uniqueKey?: string }>,
 *           vars?: Record<string, unknown>, durability?: 'full' | 'relaxed', alarmRetryMs?: number, maxOpenFiles?: number,
 *           maxLive?: number, evictAfterMs?: number, hibernateAfterMs?: number,
 *           archive?: object, control?: boolean, log?: (line: string) => void }} o
 *   log: where a failing WebSocket handler is reported (default stderr)
 *   alarmRetryMs: the delay before the first retry of an alarm() that threw, doubled for each
 *   later one (default 2000, as workerd; tests shorten it)
 *   maxOpenFiles: object files kept open at most; the least recently used idle objects past it close
 *   theirs until their next event (default 128)
 *   maxLive: objects kept in memory at most (default 10,000): past it the least recently used idle ones are evicted
 *   evictAfterMs: an idle object is evicted after this long (default 70,000, as workerd's 70–140 s)
 *   hibernateAfterMs: the same for an object whose only connections are hibernatable sockets (default 10,000)
 *   archive: the continuous archive, as open()'s option of that name (docs/backups.md)
 *   control: serve `durable-workers backup` on the directory's control socket (default false)
 * @returns {Promise<ObjectsHost>}
 */
async function openObjects(o) {
  installTimerAccounting();
  const dir = path.resolve(o.dir);
  const durability = o.durability ?? 'full';
  const archive = o.archive === undefined ? undefined : archiveOption(o.archive, dir, durability, 'openObjects()');
  const files = new OpenFiles(whole(o.maxOpenFiles, DEFAULT_MAX_OPEN_FILES, 1, 'maxOpenFiles'));
  const residents = new Residents({
    maxLive: whole(o.maxLive, 10_000, 1, 'maxLive'),
    evictAfterMs: whole(o.evictAfterMs, 70_000, 0, 'evictAfterMs'),
    hibernateAfterMs: whole(o.hibernateAfterMs, 10_000, 0, 'hibernateAfterMs'),
  });
  const commits = new Commits();
  const { native, shipper, archiveStats } = await openNative(dir, { durability, maxLive: 1 << 20, evictAfterMs: 0 }, archive, commits);
  const host = { native, commits, files, residents };
  const env = { ...o.vars };
  const namespaces = [];
  /** catalog class (`do.<Class>`) → its namespaces, for the alarms */
  const byClass = new Map();
  try {
    for (const [binding, b] of Object.entries(o.bindings)) {
      const className = b.class.name;
      const ns = new DurableObjectNamespace({
        host,
        Class: b.class,
        className,
        sql: b.sql !== false,
        uniqueKey: b.uniqueKey ?? wranglerUniqueKey(o.name, className),
        env,
        // Where a failing WebSocket handler is reported (./hibernation.js).
        log: o.log,
      });
      env[binding] = ns;
      namespaces.push(ns);
      byClass.set(`do.${className}`, [...(byClass.get(`do.${className}`) ?? []), ns]);
    }
    const retryMs = o.alarmRetryMs ?? 2000;
    if (!(retryMs >= 0)) throw new TypeError('openObjects: alarmRetryMs must be a number >= 0');
    host.alarms = new ObjectAlarms(native, byClass, { retryMs });
  } catch (err) {
    // The directory must not stay owned by a host nobody can close.
    await native.close();
    await shipper?.close();
    commits.close();
    throw err;
  }
  host.alarms.start();
  let control = null;
  let closing = null;
  /** @type {ObjectsHost} */
  const objects = {
    env,
    dir,
    backup(dest) {
      if (closing !== null) return Promise.reject(new DurableError(codes.CLOSED, `backup(): the host serving ${dir} is closed`));
      return takeSnapshot(native, dir, dest);
    },
    stats() {
      return { archive: archiveStats() };
    },
    close() {
      closing ??= (async () => {
        await control?.close();
        await host.alarms.stop();
        await Promise.all(namespaces.map((ns) => ns[kClose]()));
        // The index writes the last commits asked for.
        await host.alarms.drain();
        await native.close();
        await shipper?.close();
        commits.close();
      })();
      return closing;
    },
  };
  if (o.control === true) control = await require('../control/server').startControl(controlView(objects, native), dir);
  return objects;
}

/** An option that must be a whole number >= `min`, or its default. */
function whole(v, fallback, min, name) {
  if (v === undefined) return fallback;
  if (!Number.isInteger(v) || v < min) throw new TypeError(`openObjects: ${name} must be an integer >= ${min}, got ${JSON.stringify(v)}`);
  return v;
}

/**
 * What the control socket reaches of a Durable Object host: `backup`, and
 * `summary` (what `inspect` prints). The other operations read a worker
 * host's counters, which this one has not.
 * @param {ObjectsHost} objects
 * @param {object} native its NativeHost
 */
function controlView(objects, native) {
  const refuse = () => {
    throw new DurableError(codes.CONTROL, `${objects.dir} is served by a Durable Object host (durable-workers serve), whose control socket answers backup and summary (inspect) only`);
  };
  return {
    dir: objects.dir,
    backup: (dest) => objects.backup(dest),
    stats: refuse,
    metrics: refuse,
    [CONTROL_VIEW]: () => ({ summary: (alarms) => native.summary(alarms), workers: refuse, shards: refuse, latency: refuse }),
  };
}

/**
 * @typedef {object} ObjectsHost
 * @property {Record<string, unknown>} env the bindings (namespaces) and vars
 * @property {string} dir the durable directory, resolved
 * @property {(dest: string) => Promise<import('../tools/backup').SnapshotReport>} backup a snapshot of
 *   every object's file and the catalog into `dest` (new or empty, outside dir) while the objects serve
 * @property {() => { archive: object | null }} stats the continuous archive's counters, null without one
 * @property {() => Promise<void>} close closes every object, then the directory
 */

module.exports = { openObjects };
