'use strict';
// On a musl Node (bash .ci/musl.sh runs this file with one, x64 and arm64):
// the process says it has no glibc, the loader names the musl build and loads
// that file, a worker's write survives a close and a reopen, and a child
// started from process.execPath (as ava's workers and the crash tests are) is
// the same musl Node. On glibc this file has nothing to check and says so.
const test = require('ava');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const { open, DurableWorker } = require('../..');
const { triple, isMusl, sourceBuildPath } = require('../../js/native/platform');
const { tmpDir } = require('../helpers/tmp');

class Box extends DurableWorker {
  put(key, value) {
    this.state.set(key, value);
    return true;
  }
  get(key) {
    return this.state.get(key);
  }
}

/** The shared objects this process has mapped, by path. */
function loaded() {
  return process.report.getReport().sharedObjects;
}

if (!isMusl()) {
  test.skip('musl: runs on a musl Node only (bash .ci/musl.sh)', () => {});
} else {
  test('the process reports no glibc and the loader names the musl build', (t) => {
    t.is(process.report.getReport().header.glibcVersionRuntime, undefined);
    t.is(triple(), `linux-${process.arch}-musl`);
  });

  test('the musl build is the addon loaded, and no glibc is in the process', (t) => {
    require('../../js/native/load'); // open() loads it on first use
    const objects = loaded();
    t.true(objects.includes(sourceBuildPath(triple())), objects.filter((f) => f.endsWith('.node')).join(', '));
    t.deepEqual(
      objects.filter((f) => /\/(libc\.so\.6|ld-linux[^/]*\.so\.\d)$/.test(f)),
      [],
    );
    t.truthy(
      objects.find((f) => /\/ld-musl-[^/]+\.so\.1$/.test(f) || /\/libc\.so$/.test(f)),
      objects.join(', '),
    );
  });

  test('a write survives a close and a reopen', async (t) => {
    const dir = tmpDir(t);
    let h = await open({ dir });
    t.true(await h.get(Box, 'musl').put('k', { n: 42, at: new Date(0), big: 2n ** 64n }));
    await h.close();
    h = await open({ dir });
    t.teardown(() => h.close());
    t.deepEqual(await h.get(Box, 'musl').get('k'), { n: 42, at: new Date(0), big: 2n ** 64n });
    const ids = [];
    for await (const id of h.ids(Box)) ids.push(id);
    t.deepEqual(ids, ['musl']);
  });

  test('a child from process.execPath, and `node` on PATH, run musl and load the musl build', (t) => {
    const script = `
      const r = process.report.getReport();
      require(${JSON.stringify(path.join(__dirname, '..', '..', 'js', 'native', 'load'))});
      console.log(JSON.stringify({ glibc: r.header.glibcVersionRuntime ?? null, triple: require(${JSON.stringify(
        path.join(__dirname, '..', '..', 'js', 'native', 'platform'),
      )}).triple(), addon: process.report.getReport().sharedObjects.filter((f) => f.endsWith('.node')) }));`;
    const expected = { glibc: null, triple: triple(), addon: [sourceBuildPath(triple())] };
    t.deepEqual(JSON.parse(execFileSync(process.execPath, ['-e', script], { encoding: 'utf8' })), expected);
    t.deepEqual(JSON.parse(execFileSync('node', ['-e', script], { encoding: 'utf8' })), expected);
  });
}
