'use strict';
// Durable Object ids (js/do/ids.js) are workerd's: the same uniqueKey gives
// the same hex id for a name, on both hosts.
const test = require('ava');
const assert = require('node:assert/strict');
const fc = require('fast-check');
const { namespaceIds, DurableObjectId, wranglerUniqueKey } = require('../../js/do/ids');
const { startTiny, workerdProblem } = require('../helpers/workerd-tiny');

/** Names made of the characters where encodings differ: lone surrogates, U+FFFD, NUL, astral. */
const NAME = fc.string({
  unit: fc.oneof(fc.constantFrom('\uD800', '\uDBFF', '\uDC00', '\uDFFF', '\uFFFD', '\uFFFF', '\uE000', '\0', 'a'), fc.string({ unit: 'binary', minLength: 1, maxLength: 1 })),
  maxLength: 8,
});

// Computed by workerd 1.20261117.1 itself: uniqueKey "probe-Store",
// env.NS.idFromName(…).toString(). The last is a name with a lone surrogate,
// which workerd hashes as the bytes 61 ED A0 80 62 (not U+FFFD).
const VECTORS = [
  ['x', '0b6b15040b962c245490e7707486f2a4cd2890803e112ef912fdfc3e40c360c1'],
  ['', 'a846807b0cb10217e6be3525587cc281dba0f71fb15254a882ddf0aa6ba2e354'],
  ['123', '6c6faf82dcdfc62a96aabebaa35b0b0f07373b8747c4eb21597710e94fed230d'],
  ['a\uFFFDb', '1120308c238db0ea19e452345fa5ca31047dac1b8e6793d6b74d4fabca5f9891'],
  ['a\uD800b', '502dc600732ad88520571a87440d895fa2dcf4f74722592871d1e8345f2fb378'],
];

test('idFromName gives workerd’s id for a known uniqueKey and name (vectors computed by workerd)', (t) => {
  const ns = namespaceIds('probe-Store');
  for (const [name, hex] of VECTORS) t.is(ns.idFromName(name).toString(), hex, JSON.stringify(name));
  t.is(ns.idFromName(123).toString(), VECTORS[2][1], 'a number is coerced to its string, as JSG does');
  t.is(ns.idFromName({ toString: () => 'x' }).toString(), VECTORS[0][1]);
});

test('an id is stable for a name, differs between names and between namespaces, and round-trips through idFromString', (t) => {
  const a = namespaceIds('app-Room');
  const b = namespaceIds('app-Other');
  fc.assert(
    fc.property(NAME, NAME, (n, m) => {
      const id = a.idFromName(n);
      assert.match(id.toString(), /^[0-9a-f]{64}$/);
      assert.equal(id.toString(), namespaceIds('app-Room').idFromName(n).toString());
      assert.equal(a.idFromName(m).equals(id), n === m);
      assert.notEqual(id.toString(), b.idFromName(n).toString());
      const back = a.idFromString(id.toString());
      assert.ok(back.equals(id));
      assert.equal(back.name, undefined, 'an id from a string has no name');
      assert.equal(a.idFromString(id.toString().toUpperCase()).toString(), id.toString(), 'uppercase hex is accepted, printed lowercase');
    }),
    { numRuns: 500 },
  );
  t.pass();
});

test('name is the name as workerd keeps it: own, enumerable, read-only; jurisdiction is undefined', (t) => {
  const ns = namespaceIds('probe-Store');
  const id = ns.idFromName('x');
  t.is(id.name, 'x');
  t.is(id.jurisdiction, undefined);
  t.deepEqual(Object.keys(id), ['jurisdiction', 'name']);
  t.is(JSON.stringify(id), '{"name":"x"}');
  t.is(String(id), VECTORS[0][1]);
  t.throws(() => {
    'use strict';
    id.name = 'y';
  });
  t.is(ns.idFromName('a\uD800b').name, 'a\uFFFD\uFFFD\uFFFDb', 'a lone surrogate comes back as three U+FFFD, as from workerd');
  t.is(ns.idFromName(null).name, 'null');
  t.is(ns.newUniqueId().name, undefined);
});

test('newUniqueId makes a new id each time that this namespace accepts and another refuses', (t) => {
  const ns = namespaceIds('app-Room');
  const seen = new Set();
  for (let i = 0; i < 50; i++) {
    const id = ns.newUniqueId();
    t.false(seen.has(id.toString()));
    seen.add(id.toString());
    t.true(ns.idFromString(id.toString()).equals(id));
    const err = t.throws(() => namespaceIds('app-Other').idFromString(id.toString()), { instanceOf: TypeError });
    t.is(err.message, 'Durable Object ID is not valid for this namespace.');
  }
  t.is(ns.newUniqueId(null).toString().length, 64);
  t.is(ns.newUniqueId({ jurisdiction: null }).toString().length, 64);
  t.is(ns.newUniqueId({}).toString().length, 64);
});

test('workerd’s errors: malformed hex, a foreign MAC, a missing argument, jurisdictions, equals with a non-id, construction', (t) => {
  const ns = namespaceIds('probe-Store');
  const bad = 'Invalid Durable Object ID: must be 64 hex digits';
  for (const s of ['abc', 'g'.repeat(64), VECTORS[0][1] + '0', VECTORS[0][1].slice(1), ` ${VECTORS[0][1].slice(1)}`, null, 42]) {
    t.is(t.throws(() => ns.idFromString(s), { instanceOf: TypeError }).message, bad, String(s));
  }
  t.is(t.throws(() => ns.idFromString('0'.repeat(64)), { instanceOf: TypeError }).message, 'Durable Object ID is not valid for this namespace.');
  t.is(t.throws(() => ns.idFromName(), { instanceOf: TypeError }).message, "Failed to execute 'idFromName' on 'DurableObjectNamespace': parameter 1 is not of type 'string'.");
  t.is(t.throws(() => ns.idFromString(undefined), { instanceOf: TypeError }).message, "Failed to execute 'idFromString' on 'DurableObjectNamespace': parameter 1 is not of type 'string'.");
  t.is(t.throws(() => ns.idFromName(Symbol('s')), { instanceOf: TypeError }).message, 'Cannot convert a Symbol value to a string');
  const j = 'Jurisdiction restrictions are not implemented in workerd.';
  for (const o of [{ jurisdiction: 'eu' }, { jurisdiction: '' }]) t.is(t.throws(() => ns.newUniqueId(o), { instanceOf: Error }).message, j);
  t.is(t.throws(() => ns.newUniqueId(5), { instanceOf: TypeError }).message, "Failed to execute 'newUniqueId' on 'DurableObjectNamespace': parameter 1 is not of type 'NewUniqueIdOptions'.");
  t.is(t.throws(() => ns.jurisdiction('eu'), { instanceOf: Error }).message, j);
  t.is(ns.jurisdiction(null).idFromName('x').toString(), VECTORS[0][1]);
  t.is(ns.jurisdiction().idFromName('x').toString(), VECTORS[0][1]);
  t.is(t.throws(() => ns.idFromName('x').equals(VECTORS[0][1]), { instanceOf: TypeError }).message, "Failed to execute 'equals' on 'DurableObjectId': parameter 1 is not of type 'DurableObjectId'.");
  t.is(t.throws(() => new DurableObjectId(), { instanceOf: TypeError }).message, 'Illegal constructor');
});

test('idFromStringNamed restores a stored id with its name, checking the MAC but not the name', (t) => {
  const ns = namespaceIds('probe-Store');
  const id = ns.idFromStringNamed(VECTORS[0][1], 'x');
  t.true(id.equals(ns.idFromName('x')));
  t.is(id.name, 'x');
  t.is(ns.idFromStringNamed(VECTORS[0][1], 'not x').name, 'not x');
  t.is(t.throws(() => namespaceIds('other').idFromStringNamed(VECTORS[0][1], 'x')).message, 'Durable Object ID is not valid for this namespace.');
});

test('wranglerUniqueKey is miniflare’s `<worker name>-<class>`', (t) => {
  t.is(wranglerUniqueKey('chat', 'Room'), 'chat-Room');
  t.is(wranglerUniqueKey(undefined, 'Room'), '-Room');
});

const problem = workerdProblem();
const onWorkerd = problem === null ? test.serial : test.serial.skip;
const title = (s) => (problem === null ? s : `${s} (skipped: ${problem})`);

onWorkerd(title('on a real workerd, the same uniqueKey gives the same ids, names and errors as here'), async (t) => {
  t.timeout(90_000);
  const namespaces = [
    { binding: 'ROOMS', uniqueKey: 'chat-Room' },
    { binding: 'OTHER', uniqueKey: 'durable-workers:Other' },
  ];
  const w = await startTiny(namespaces);
  t.teardown(() => w.close());
  const names = ['x', '', 'room-1', 'a\uD800b', '\uDC00', '\u{1F600}', '\0', 'n'.repeat(3000), ...fc.sample(NAME, { numRuns: 60, seed: 7 })];
  for (const { binding, uniqueKey } of namespaces) {
    const mine = namespaceIds(uniqueKey);
    const local = (f) => {
      try {
        const id = f();
        return { ok: { hex: id.toString(), name: id.name ?? null } };
      } catch (e) {
        return { error: [e.name, e.message] };
      }
    };
    const fromNames = await w.run(
      binding,
      names.map((name) => ({ op: 'idFromName', name })),
    );
    t.deepEqual(
      fromNames,
      names.map((n) => local(() => mine.idFromName(n))),
    );
    const strings = [fromNames[0].ok.hex, fromNames[0].ok.hex.toUpperCase(), '0'.repeat(64), 'abc', 'z'.repeat(64)];
    const other = namespaceIds(namespaces.find((n) => n.binding !== binding).uniqueKey);
    strings.push(other.idFromName('x').toString(), other.newUniqueId().toString());
    t.deepEqual(
      await w.run(
        binding,
        strings.map((hex) => ({ op: 'idFromString', hex })),
      ),
      strings.map((hex) => local(() => mine.idFromString(hex))),
    );
    // workerd's unique ids are accepted here, and ours there.
    const [u] = await w.run(binding, [{ op: 'newUniqueId' }]);
    t.is(mine.idFromString(u.ok.hex).toString(), u.ok.hex);
    const [back] = await w.run(binding, [{ op: 'idFromString', hex: mine.newUniqueId().toString() }]);
    t.truthy(back.ok);
    t.deepEqual(await w.run(binding, [{ op: 'newUniqueId', options: { jurisdiction: 'eu' } }]), [local(() => mine.newUniqueId({ jurisdiction: 'eu' }))]);
  }
});
