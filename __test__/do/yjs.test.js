'use strict';
// y-partyserver 2.2.0 (with yjs, y-protocols, lib0), unchanged, on this host:
// the fixture __test__/fixtures/do-yjs served by the CLI in a child process,
// edited by two YProviders on `ws`. Two providers converge through the
// server's document; the document's onSave (a debounce timer in the object,
// writing ctx.storage.sql) lands; after a SIGKILL and a restart on the same
// directory, onLoad gives a fresh provider the same text. Both socket modes
// of partyserver: party "document" (default) and "hib-document" (hibernating).
const test = require('ava');
const path = require('node:path');
const WS = require('ws');
const Y = require('yjs');
const { default: YProvider } = require('y-partyserver/provider');
const { tmpDir } = require('../helpers/tmp');
const { startServe } = require('../helpers/serve-cli');
const { until, sleep } = require('../helpers/poll');

const APP = path.join(__dirname, '..', 'fixtures', 'do-yjs');

/** The fixture on a free port over `dir`; killed when the test ends if still running. */
async function serveDocs(t, dir) {
  const s = await startServe(['--config', path.join(APP, 'wrangler.jsonc'), '--dir', dir, '--port', '0'], { cwd: APP, t });
  if (s.url === null) throw new Error(`serve exited before it was ready: ${s.stderr()}`);
  return s;
}

/** A YProvider for `room` on a new Y.Doc, synced with the server; destroyed when the test ends. */
async function provider(t, url, party, room) {
  const doc = new Y.Doc();
  const p = new YProvider(new URL(url).host, room, doc, { party, WebSocketPolyfill: WS });
  t.teardown(() => p.destroy());
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${party}/${room}: not synced within 5 s`)), 5000);
    p.once('synced', () => {
      clearTimeout(timer);
      resolve();
    });
  });
  return { p, doc, text: doc.getText('shared') };
}

/** What the object has on disk for `room` ({ saved, saves }), read through its onRequest. */
async function onDisk(url, party, room) {
  const res = await fetch(`${url}/parties/${party}/${room}`);
  if (res.status !== 200) throw new Error(`GET ${party}/${room}: ${res.status} ${await res.text()}`);
  return res.json();
}

const ROUNDS = 20;

const converge = test.macro(async (t, party) => {
  const dir = path.join(tmpDir(t), 'data');
  const first = await serveDocs(t, dir);
  const a = await provider(t, first.url, party, 'doc-1');
  const b = await provider(t, first.url, party, 'doc-1');

  // Awareness goes through the server to the other client.
  a.p.awareness.setLocalStateField('user', 'alice');
  await until(() => [...b.p.awareness.getStates().values()].some((s) => s.user === 'alice'), 5000, "alice's awareness at B");

  // Concurrent edits: each round both insert before seeing the other's.
  for (let i = 0; i < ROUNDS; i++) {
    a.text.insert(0, `a${i};`);
    b.text.insert(b.text.length, `b${i};`);
    if (i % 5 === 4) await sleep(5);
  }
  const both = (s) => Array.from({ length: ROUNDS }, (_, i) => s.includes(`a${i};`) && s.includes(`b${i};`)).every(Boolean);
  await until(
    () => a.text.toString() === b.text.toString() && both(a.text.toString()),
    5000,
    () => `convergence: A ${a.text.toString()} / B ${b.text.toString()}`,
  );
  const text = a.text.toString();
  t.is(
    text.length,
    Array.from({ length: ROUNDS }, (_, i) => 2 * `a${i};`.length).reduce((x, y) => x + y),
    'each edit once',
  );

  // onSave (debounced 50 ms, at most 200 ms) persisted the converged state
  // (polled through the object: until() takes a synchronous check).
  let disk;
  for (const deadline = Date.now() + 5000; (disk = await onDisk(first.url, party, 'doc-1')).saved !== text;) {
    if (Date.now() > deadline) t.fail(`onSave did not persist the converged text; on disk: ${JSON.stringify(disk)}`);
    await sleep(25);
  }
  t.true(disk.saves >= 1);

  // SIGKILL with the clients connected: only what onSave committed survives.
  first.child.kill('SIGKILL');
  t.is((await first.exited).signal, 'SIGKILL');
  a.p.destroy();
  b.p.destroy();

  const second = await serveDocs(t, dir);
  const c = await provider(t, second.url, party, 'doc-1');
  t.is(c.text.toString(), text);
  t.is((await onDisk(second.url, party, 'doc-1')).saved, text);
  t.is(first.stderr() + second.stderr(), '', 'nothing the app or y-partyserver did threw');
});

test('y-partyserver: two providers converge, onSave persists, a restart loads it (default sockets)', converge, 'document');
test('y-partyserver: the same with hibernating sockets', converge, 'hib-document');
