'use strict';
// Damaged files: a worker file truncated, overwritten with random bytes,
// emptied, or holding another worker, gets ERR_DURABLE_CORRUPT naming that
// worker, and every other worker carries on. A catalog that was deleted is
// rebuilt by open() from the worker files; one that is damaged is refused
// with ERR_DURABLE_CORRUPT naming the repair command, and repair() moves it
// aside and rebuilds it. Real files, damaged the way a disk or a person would.
const test = require('ava');
const fs = require('node:fs');
const path = require('node:path');
const crypto = require('node:crypto');
const { open, DurableWorker } = require('../..');
const { repair } = require('../../js/tools/repair');
const { tmpDir } = require('../helpers/tmp');

class Note extends DurableWorker {
  static collections = { lines: { n: 'integer' } };

  async write(text) {
    this.state.set('text', text);
    this.state.collection('lines').put('1', { n: 1, text });
    await this.state.setAlarm(Date.now() + 3_600_000);
  }

  async read() {
    return { text: this.state.get('text'), lines: await this.state.collection('lines').count(), alarm: this.state.getAlarm() !== null };
  }
}

const IDS = ['a', 'b', 'c', 'd', 'e'];

/** A directory with five notes written and closed, and their files. */
async function notes(t) {
  const dir = tmpDir(t);
  const host = await open({ dir });
  for (const id of IDS) await host.get(Note, id).write(`note ${id}`);
  await host.close();
  const files = {};
  for (const sub of fs.readdirSync(path.join(dir, 'Note'))) {
    for (const f of fs.readdirSync(path.join(dir, 'Note', sub))) if (f.endsWith('.db')) files[f] = path.join(dir, 'Note', sub, f);
  }
  // Which file is whose is the core's business (a hash of the id): the tests
  // damage a file and see which worker it was.
  return { dir, files: Object.values(files) };
}

async function ids(host) {
  const out = [];
  for await (const id of host.ids(Note)) out.push(id);
  return out;
}

const damages = {
  truncated: (f) => fs.truncateSync(f, Math.floor(fs.statSync(f).size / 3)),
  'random bytes': (f) => fs.writeFileSync(f, crypto.randomBytes(fs.statSync(f).size)),
  emptied: (f) => fs.truncateSync(f, 0),
};

for (const [how, damage] of Object.entries(damages)) {
  test(`a worker file ${how} is ERR_DURABLE_CORRUPT for that worker alone`, async (t) => {
    const { dir, files } = await notes(t);
    const victim = files[0];
    damage(victim);
    const host = await open({ dir });
    t.teardown(() => host.close());
    const results = await Promise.allSettled(IDS.map((id) => host.get(Note, id).read()));
    const failed = results.filter((r) => r.status === 'rejected');
    t.is(failed.length, 1, JSON.stringify(results.map((r) => r.status)));
    t.is(failed[0].reason.code, 'ERR_DURABLE_CORRUPT');
    t.regex(failed[0].reason.message, /Note "[a-e]".*not a valid worker database/);
    for (const r of results.filter((x) => x.status === 'fulfilled')) t.like(r.value, { lines: 1, alarm: true });
    // Still refused on the next call, not quietly reset to empty.
    const who = failed[0].reason.message.match(/Note "([a-e])"/)[1];
    t.is((await t.throwsAsync(host.get(Note, who).read())).code, 'ERR_DURABLE_CORRUPT');
  });
}

test('a worker file holding another worker is ERR_DURABLE_CORRUPT naming both', async (t) => {
  const { dir, files } = await notes(t);
  fs.copyFileSync(files[0], files[1]);
  const host = await open({ dir });
  t.teardown(() => host.close());
  const results = await Promise.allSettled(IDS.map((id) => host.get(Note, id).read()));
  const failed = results.filter((r) => r.status === 'rejected');
  t.is(failed.length, 1);
  t.is(failed[0].reason.code, 'ERR_DURABLE_CORRUPT');
  t.regex(failed[0].reason.message, /it holds worker Note:[a-e] and was opened as Note:[a-e]/);
});

test('a deleted catalog is rebuilt by open() from the worker files, alarms included', async (t) => {
  const { dir } = await notes(t);
  for (const f of fs.readdirSync(dir)) if (f.startsWith('_registry.db')) fs.rmSync(path.join(dir, f));
  const host = await open({ dir });
  t.teardown(() => host.close());
  t.deepEqual(await ids(host), IDS);
  const { inspect } = require('../../js/tools/inspect');
  await host.close();
  const seen = await inspect(dir);
  t.is(seen.alarms.count, IDS.length, 'every alarm is findable again');
  t.deepEqual(
    seen.classes.map((c) => [c.name, c.workers]),
    [['Note', 5]],
  );
});

test('a damaged catalog is refused naming the repair command; repair() moves it aside and rebuilds it', async (t) => {
  const { dir, files } = await notes(t);
  const registry = path.join(dir, '_registry.db');
  fs.writeFileSync(registry, crypto.randomBytes(fs.statSync(registry).size));
  const err = await t.throwsAsync(open({ dir }));
  t.is(err.code, 'ERR_DURABLE_CORRUPT');
  t.regex(err.message, /durable-workers repair/);

  // One worker file is damaged too: skipped and reported, not adopted.
  fs.writeFileSync(files[2], crypto.randomBytes(4096));
  const report = await repair(dir);
  t.is(report.workers, 4);
  t.is(report.alarms, 4);
  t.is(report.skipped.length, 1);
  t.is(report.skipped[0].file, files[2]);
  t.truthy(report.movedAside);
  t.true(fs.existsSync(report.movedAside), 'the damaged catalog is kept, aside');

  const host = await open({ dir });
  t.teardown(() => host.close());
  t.is((await ids(host)).length, 4);
  const ok = await Promise.allSettled(IDS.map((id) => host.get(Note, id).read()));
  t.is(ok.filter((r) => r.status === 'fulfilled').length, 4);
});

test('repair() of a directory another host owns is ERR_DURABLE_LOCKED', async (t) => {
  const { dir } = await notes(t);
  const host = await open({ dir });
  t.teardown(() => host.close());
  t.is((await t.throwsAsync(repair(dir))).code, 'ERR_DURABLE_LOCKED');
});

test('the repair command rebuilds a damaged catalog, and refuses with exit 3 while a process owns the directory', async (t) => {
  const { execFile } = require('node:child_process');
  const bin = path.join(__dirname, '..', '..', 'bin', 'durable-workers.js');
  const run = (...args) => new Promise((resolve) => execFile(process.execPath, [bin, ...args], (err, stdout, stderr) => resolve({ code: err ? err.code : 0, stdout, stderr })));
  const { dir } = await notes(t);
  const host = await open({ dir });
  const owned = await run('repair', dir);
  t.is(owned.code, 3, owned.stderr);
  t.regex(owned.stderr, /owns/);
  await host.close();
  fs.writeFileSync(path.join(dir, '_registry.db'), 'not a database'.repeat(500));
  const done = await run('repair', dir, '--json');
  t.is(done.code, 0, done.stderr);
  const report = JSON.parse(done.stdout);
  t.is(report.workers, 5);
  t.truthy(report.movedAside);
  const again = await open({ dir });
  t.teardown(() => again.close());
  t.deepEqual(await ids(again), IDS);
});
