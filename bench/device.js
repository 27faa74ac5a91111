'use strict';
// The device's sync rate: how many durable writes per second one writer can
// make if every write waits for its own sync. This is the ceiling for serial
// durable calls; only sharing a sync between calls gets past it.
//
// Run alone: node bench/device.js [dir] [seconds]

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { performance } = require('node:perf_hooks');
const { percentile } = require('./measure');

const BLOCK = 4096;

/**
 * Writes 4 KiB and fdatasyncs it, in a loop, for `seconds`.
 *
 * The block is rewritten at offset 0 so the file's size never changes and
 * fdatasync has only data to flush (no size or allocation metadata, hence no
 * filesystem journal commit): the device's own flush latency, which is what a
 * preallocated write-ahead log pays.
 *
 * @param {object} o
 * @param {string} o.dir directory for the temporary file (on the device under test)
 * @param {number} [o.seconds=2]
 * @returns {{ syncsPerSec: number, usPerSync: number, p50us: number, p99us: number, syncs: number }}
 */
function measureDeviceSync({ dir, seconds = 2 }) {
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `device-${process.pid}.bin`);
  const block = Buffer.alloc(BLOCK, 0xa5);
  const fd = fs.openSync(file, 'w+');
  try {
    // Allocate and flush the block once so the timed loop never extends the file.
    fs.writeSync(fd, block, 0, BLOCK, 0);
    fs.fsyncSync(fd);
    const samples = [];
    const start = performance.now();
    const deadline = start + seconds * 1000;
    let now = start;
    while (now < deadline) {
      fs.writeSync(fd, block, 0, BLOCK, 0);
      fs.fdatasyncSync(fd);
      const after = performance.now();
      samples.push((after - now) * 1000);
      now = after;
    }
    const elapsed = (now - start) / 1000;
    samples.sort((a, b) => a - b);
    return {
      syncs: samples.length,
      syncsPerSec: samples.length / elapsed,
      usPerSync: (elapsed * 1e6) / samples.length,
      p50us: percentile(samples, 50),
      p99us: percentile(samples, 99),
    };
  } finally {
    fs.closeSync(fd);
    fs.rmSync(file, { force: true });
  }
}

/** Scenarios for the child runner (bench/child.js). */
const scenarios = {
  /** @param {{ dir: string, seconds: number }} opts */
  sync: async (opts) => {
    const r = measureDeviceSync(opts);
    return {
      value: r.syncsPerSec,
      unit: 'syncs/s',
      notes: { usPerSync: r.usPerSync, p50us: r.p50us, p99us: r.p99us, syncs: r.syncs },
    };
  },
};

module.exports = { measureDeviceSync, scenarios };

if (require.main === module) {
  const dir = process.argv[2] ?? fs.mkdtempSync(path.join(os.tmpdir(), 'dw-device-'));
  const seconds = Number(process.argv[3] ?? 2);
  const r = measureDeviceSync({ dir, seconds });
  const preload = process.env.LD_PRELOAD ? ` (LD_PRELOAD=${process.env.LD_PRELOAD})` : '';
  console.log(
    `write 4 KiB + fdatasync in ${dir}${preload}: ${Math.round(r.syncsPerSec).toLocaleString('en-US')} syncs/s, ` +
      `${r.usPerSync.toFixed(1)} µs per sync (p50 ${r.p50us.toFixed(1)} µs, p99 ${r.p99us.toFixed(1)} µs)`,
  );
  if (process.argv[2] === undefined) fs.rmSync(dir, { recursive: true, force: true });
}
