'use strict';
// Durable Object classes on this engine, in process: one durable directory,
// one namespace per binding, the classes constructed as Cloudflare
// constructs them. `serve` builds on this.

const path = require('node:path');
const { Commits } = require('../runtime/commits');
const { fromNative } = require('../api/errors');
const { DurableObjectNamespace, kClose } = require('./namespace');
const { wranglerUniqueKey } = require('./ids');
const { ObjectAlarms } = require('./alarms');
const { OpenFiles } = require('./open-files');

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
 *           log?: (line: string) => void }} o
 *   log: where a failing WebSocket handler is reported (default stderr)
 *   alarmRetryMs: the delay before the first retry of an alarm() that threw, doubled for each
 *   later one (default 2000, as workerd; tests shorten it)
 *   maxOpenFiles: object files kept open at most; the least recently used idle objects past it close
 *   theirs until their next event (default 128)
 * @returns {Promise<{ env: Record<string, unknown>, close(): Promise<void> }>}
 */
async function openObjects(o) {
  const { NativeHost } = require('../native/load');
  const commits = new Commits();
  const dir = path.resolve(o.dir);
  let native;
  try {
    native = NativeHost.open(dir, { durability: o.durability ?? 'full', maxLive: 1 << 20, evictAfterMs: 0 }, commits.done);
  } catch (err) {
    commits.close();
    throw fromNative(err, `open(${JSON.stringify(dir)})`);
  }
  const maxOpenFiles = o.maxOpenFiles ?? DEFAULT_MAX_OPEN_FILES;
  if (!Number.isInteger(maxOpenFiles) || maxOpenFiles < 1) {
    await native.close();
    commits.close();
    throw new TypeError('openObjects: maxOpenFiles must be an integer >= 1');
  }
  const host = { native, commits, files: new OpenFiles(maxOpenFiles) };
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
    commits.close();
    throw err;
  }
  host.alarms.start();
  return {
    env,
    async close() {
      await host.alarms.stop();
      await Promise.all(namespaces.map((ns) => ns[kClose]()));
      // The index writes the last commits asked for.
      await host.alarms.drain();
      await native.close();
      commits.close();
    },
  };
}

module.exports = { openObjects };
