#!/usr/bin/env node
'use strict';
// The release workflow's smoke check, run on every OS and Node line before
// the test suite: the addon in native/ (the build job's artifact for this
// platform) loads, a host opens a directory, a worker commits keys and
// documents, and a reopened host reads them back. Unlike the suite, nothing
// here needs the sqlite3 CLI, signals, other uids or a POSIX path, so a
// failure here is the package's own on that platform.
//
//   node .github/scripts/smoke.js
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const { triple, sourceBuildPath } = require('../../js/native/platform');

const t = triple();
if (!fs.existsSync(sourceBuildPath(t))) {
  console.error(`smoke: no ${path.relative(process.cwd(), sourceBuildPath(t))}: the build artifact for ${t} was not put in native/`);
  process.exit(1);
}

const { open, DurableWorker } = require('../..');

class Tally extends DurableWorker {
  static collections = { entries: { kind: 'text' } };

  async add(kind, n) {
    const total = (this.state.get('total') ?? 0) + n;
    this.state.set('total', total);
    this.state.collection('entries').put(`e${total}`, { kind, n });
    return total;
  }

  async read() {
    const found = await this.state.collection('entries').find({ where: { kind: 'apple' } });
    return { total: this.state.get('total'), apples: found.length };
  }
}

async function main() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'durable-workers-smoke-'));
  try {
    let host = await open({ dir });
    const tally = host.get(Tally, 'shop/1');
    assert.equal(await tally.add('apple', 2), 2);
    assert.equal(await tally.add('pear', 3), 5);
    assert.equal(await tally.add('apple', 1), 6);
    await host.close();

    host = await open({ dir });
    assert.deepEqual(await host.get(Tally, 'shop/1').read(), { total: 6, apples: 2 });
    await host.close();
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  console.log(`smoke: ${t}, Node ${process.versions.node}: open, commit, reopen, read: ok`);
}

main().catch((err) => {
  console.error('smoke: failed:', err);
  process.exitCode = 1;
});
