'use strict';
// list() options (js/do/list-range.js) select exactly the keys their meaning
// says, in workerd's order, with workerd's errors: checked option by option,
// against a brute-force oracle with fast-check, and against a real workerd.
const test = require('ava');
const assert = require('node:assert/strict');
const fc = require('fast-check');
const { compileList, compileRange, compareKeys, BOTH_STARTS, LIMIT_NOT_POSITIVE } = require('../../js/do/list-range');
const { toBytes, fromBytes } = require('../../js/do/keys');
const { startTiny, workerdProblem } = require('../helpers/workerd-tiny');

const b = (s) => (typeof s === 'string' ? toBytes(s) : Buffer.from(s));
const RANGE_ERROR = 'Value out of range. Must be between -2147483648 and 2147483647 (inclusive).';

/** What a storage backend does with a compiled range (workerd's sqlite-kv.h stmtList*): start <= key < end, ordered, limited. */
function apply(range, keys) {
  if (range === null) return [];
  const rows = keys
    .map(b)
    .sort(compareKeys)
    .filter((k) => (range.start === null || compareKeys(k, range.start) >= 0) && (range.end === null || compareKeys(k, range.end) < 0));
  if (range.reverse) rows.reverse();
  return range.limit === null ? rows : rows.slice(0, range.limit);
}

/** What list() means, straight from the option names: the oracle. */
function brute(o, keys) {
  if (o.start !== undefined && o.startAfter !== undefined) return { error: BOTH_STARTS };
  if (o.limit !== undefined && !(o.limit > 0)) return { error: LIMIT_NOT_POSITIVE };
  const has = (k, p) => k.length >= p.length && compareKeys(k.subarray(0, p.length), p) === 0;
  const rows = keys
    .map(b)
    .sort(compareKeys)
    .filter(
      (k) =>
        (o.start === undefined || compareKeys(k, b(o.start)) >= 0) &&
        (o.startAfter === undefined || compareKeys(k, b(o.startAfter)) > 0) &&
        (o.end === undefined || compareKeys(k, b(o.end)) < 0) &&
        (o.prefix === undefined || has(k, b(o.prefix))),
    );
  if (o.reverse) rows.reverse();
  return { rows: o.limit === undefined ? rows : rows.slice(0, o.limit) };
}

function compiled(compile, o, keys) {
  try {
    return { rows: apply(compile(o), keys) };
  } catch (err) {
    assert.ok(err instanceof TypeError, String(err));
    return { error: err.message };
  }
}

const hex = (r) => (r.rows ? { rows: r.rows.map((k) => Buffer.from(k).toString('hex')) } : r);

test('start and startAfter together, and a limit that is not positive, are TypeErrors with workerd’s messages', (t) => {
  t.is(BOTH_STARTS, 'list() cannot be called with both start and startAfter values.');
  t.is(LIMIT_NOT_POSITIVE, 'List limit must be positive.');
  t.is(t.throws(() => compileList({ start: 'a', startAfter: 'a' }), { instanceOf: TypeError }).message, BOTH_STARTS);
  // As WebIDL longs: NaN, ±Infinity, null and 'x' read as 0; fractions truncate toward 0.
  for (const limit of [0, -1, 0.5, -0.5, NaN, Infinity, -Infinity, null, 'x', false]) {
    t.is(t.throws(() => compileList({ limit }), { instanceOf: TypeError }).message, LIMIT_NOT_POSITIVE, String(limit));
  }
  for (const limit of [1e10, -1e10, 2147483648]) t.is(t.throws(() => compileList({ limit }), { instanceOf: TypeError }).message, RANGE_ERROR);
  t.is(t.throws(() => compileList({ limit: 1n }), { instanceOf: TypeError }).message, 'Cannot convert a BigInt value to a number');
});

test('errors come in workerd’s order: coercion, then start/startAfter, then the limit, then emptiness', (t) => {
  t.is(t.throws(() => compileList({ start: 'a', startAfter: 'a', limit: 1e10 })).message, RANGE_ERROR);
  t.is(t.throws(() => compileList({ start: 'a', startAfter: 'a', limit: 0 })).message, BOTH_STARTS);
  t.is(t.throws(() => compileList({ start: 'b', end: 'a', limit: 0 })).message, LIMIT_NOT_POSITIVE);
  t.is(t.throws(() => compileList({ prefix: 'a', start: 'b', limit: -1 })).message, LIMIT_NOT_POSITIVE);
});

test('options that are not an object are refused naming the API; undefined and null are no options', (t) => {
  const all = { start: null, end: null, reverse: false, limit: null };
  t.deepEqual(compileList(undefined), all);
  t.deepEqual(compileList(null), all);
  t.deepEqual(compileList([]), { ...all, reverse: true }, 'an array is an object, and its `reverse` method is truthy (as on workerd)');
  t.deepEqual(
    compileList(() => 1),
    all,
  );
  t.is(t.throws(() => compileList(5), { instanceOf: TypeError }).message, "Failed to execute 'list' on 'DurableObjectStorage': parameter 1 is not of type 'ListOptions'.");
  t.is(t.throws(() => compileList('abc', 'SyncKvStorage'), { instanceOf: TypeError }).message, "Failed to execute 'list' on 'SyncKvStorage': parameter 1 is not of type 'ListOptions'.");
});

test('fields are coerced as JSG does: keys by ToString, reverse by truthiness, limit truncated', (t) => {
  t.deepEqual(compileList({ start: null }).start, b('null'));
  t.deepEqual(compileList({ end: 12 }).end, b('12'));
  t.is(compileList({ limit: '2' }).limit, 2);
  t.is(compileList({ limit: 1.9 }).limit, 1);
  t.is(compileList({ reverse: 'yes' }).reverse, true);
  t.is(compileList({ reverse: 0 }).reverse, false);
  t.is(t.throws(() => compileList({ prefix: Symbol('p') }), { instanceOf: TypeError }).message, 'Cannot convert a Symbol value to a string');
  // A lone surrogate is kept as its own bytes (ED A0 80), not U+FFFD.
  t.deepEqual(compileList({ start: 'a\uD800' }).start, Buffer.from([0x61, 0xed, 0xa0, 0x80]));
});

test('startAfter becomes the inclusive start startAfter + "\\0"; reverse changes no bound', (t) => {
  t.deepEqual(compileList({ startAfter: 'ab' }), { start: b('ab\0'), end: null, reverse: false, limit: null });
  t.deepEqual(compileList({ startAfter: '', end: 'b', reverse: true, limit: 3 }), { start: b('\0'), end: b('b'), reverse: true, limit: 3 });
  t.deepEqual(compileList({ start: '' }).start, null, 'an empty start is no lower bound');
});

test('a prefix clamps the range to the keys that start with it', (t) => {
  t.deepEqual(compileList({ prefix: 'ab' }), { start: b('ab'), end: b('ac'), reverse: false, limit: null });
  t.deepEqual(compileList({ prefix: 'ab', start: 'a' }).start, b('ab'), 'a start before the prefix moves up to it');
  t.deepEqual(compileList({ prefix: 'ab', start: 'abz' }).start, b('abz'), 'a start inside the prefix stays');
  t.is(compileList({ prefix: 'ab', start: 'b' }), null, 'a start past the prefix: nothing');
  t.is(compileList({ prefix: 'ab', startAfter: 'ac' }), null);
  t.deepEqual(compileList({ prefix: 'ab', end: 'abc' }).end, b('abc'), 'an end inside the prefix stays');
  t.deepEqual(compileList({ prefix: 'ab', end: 'z' }).end, b('ac'), 'an end beyond the prefix is the key after it');
  t.is(compileList({ prefix: 'ab', end: 'ab' }), null, 'an end at or before the prefix: nothing');
  t.is(compileList({ prefix: 'ab', end: 'aa' }), null);
  t.deepEqual(compileList({ prefix: '' }), compileList({}), 'an empty prefix is no prefix');
  t.deepEqual(compileList({ prefix: '\u{10FFFF}' }).end, Buffer.from([0xf4, 0x8f, 0xbf, 0xc0]), 'the last byte is incremented, even past UTF-8');
});

test('prefixes ending in 0xff bytes (reachable only as bytes): the trailing 0xff are dropped before the increment; all-0xff has no end', (t) => {
  t.deepEqual(compileRange({ prefix: b([0x61, 0xff]) }).end, b([0x62]));
  t.deepEqual(compileRange({ prefix: b([0x61, 0xfe, 0xff, 0xff]) }).end, b([0x61, 0xff]));
  t.deepEqual(compileRange({ prefix: b([0xff, 0xff]) }), { start: b([0xff, 0xff]), end: null, reverse: false, limit: null });
  t.deepEqual(compileRange({ prefix: b([0xff]), end: b([0xff, 0x01]) }).end, b([0xff, 0x01]), 'with no end of its own, the prefix keeps the given end');
  t.is(compileRange({ prefix: b([0xff]), end: b([0xfe]) }), null, 'which is then checked against the start');
});

test('end at or before start is an empty result', (t) => {
  t.is(compileList({ start: 'b', end: 'a' }), null);
  t.is(compileList({ start: 'a', end: 'a' }), null);
  t.is(compileList({ startAfter: 'a', end: 'a\0' }), null);
  t.is(compileList({ end: '' }), null);
  t.deepEqual(compileList({ startAfter: 'a', end: 'a\0\0' }), { start: b('a\0'), end: b('a\0\0'), reverse: false, limit: null });
});

test('compareKeys orders by bytes: code points, lone surrogates between U+D7FF and U+E000', (t) => {
  const sorted = ['', '\0', 'a', 'a\0', 'ab', '\u00FF', '\uD7FF', '\uD800', '\uDFFF', '\uE000', '\uFFFD', '\uFFFF', '\u{10000}', '\u{10FFFF}'];
  t.deepEqual([...sorted].reverse().sort(compareKeys), sorted);
  t.is(compareKeys('x', 'x'), 0);
  t.true(compareKeys('\uFFFF', '\u{1F600}') < 0, 'not UTF-16 order');
  t.is(compareKeys(b('a'), 'a'), 0);
});

const ALPHABET = ['a', 'b', '\0', '\u00FF', '\uD800', '\uDC00', '\uE000', '\uFFFD', '\uFFFF', '\u{1F600}', '\u{10FFFF}'];
const key = fc.string({ unit: fc.constantFrom(...ALPHABET), maxLength: 3 });
const options = fc.record({ start: key, startAfter: key, end: key, prefix: key, reverse: fc.boolean(), limit: fc.integer({ min: -1, max: 6 }) }, { requiredKeys: [] });

test('property: for any keys and options, compileList + the range scan selects what list() means (brute force)', (t) => {
  fc.assert(
    fc.property(fc.uniqueArray(key, { maxLength: 24, selector: (k) => toBytes(k).toString('hex') }), options, (keys, o) => {
      assert.deepEqual(hex(compiled(compileList, o, keys)), hex(brute(o, keys)));
    }),
    { numRuns: 5000 },
  );
  t.pass();
});

test('property: the same on raw bytes with 0x00, 0xfe and 0xff, for compileRange', (t) => {
  const bytes = fc.uint8Array({ maxLength: 3 }).map((a) => Buffer.from(a.map((x) => [0x00, 0x61, 0xfe, 0xff][x % 4])));
  const o = fc.record({ start: bytes, startAfter: bytes, end: bytes, prefix: bytes, reverse: fc.boolean(), limit: fc.integer({ min: -1, max: 6 }) }, { requiredKeys: [] });
  fc.assert(
    fc.property(fc.uniqueArray(bytes, { maxLength: 24, selector: (k) => k.toString('hex') }), o, (keys, opts) => {
      assert.deepEqual(hex(compiled(compileRange, opts, keys)), hex(brute(opts, keys)));
    }),
    { numRuns: 5000 },
  );
  t.pass();
});

const problem = workerdProblem();
const onWorkerd = problem === null ? test.serial : test.serial.skip;
const title = (s) => (problem === null ? s : `${s} (skipped: ${problem})`);

onWorkerd(title('on a real workerd, kv.list() and storage.list() return what compileList selects, and throw what it throws'), async (t) => {
  t.timeout(90_000);
  const w = await startTiny([{ binding: 'NS', uniqueKey: 'durable-workers:list-range' }]);
  t.teardown(() => w.close());
  const keys = fc.sample(fc.uniqueArray(key, { minLength: 30, maxLength: 30, selector: (k) => toBytes(k).toString('hex') }), { numRuns: 1, seed: 11 })[0];
  for (const k of ['', 'a', 'ab', 'abc', 'b']) if (!keys.includes(k)) keys.push(k);
  const chosen = [
    {},
    { start: 'a', startAfter: 'a' },
    { limit: 0 },
    { limit: 1.9 },
    { limit: 'x' },
    { limit: 1e10, start: 'a', startAfter: 'a' },
    { prefix: 'a' },
    { prefix: 'a\uD800' },
    { start: 'a\uD800' },
    { start: null },
    { reverse: 'yes', limit: 4 },
    5,
    'abc',
    null,
    [],
  ];
  const opts = chosen.concat(fc.sample(options, { numRuns: 150, seed: 12 }));
  const [{ ok: answers }] = await w.run('NS', [{ op: 'list', keys, options: opts }]);
  // Keys come back from workerd as strings decoded from their bytes (a lone surrogate as U+FFFD × 3).
  const local = (o, api) => {
    try {
      const rows = apply(compileList(o, api), keys).map(fromBytes);
      // storage.list() answers a Map keyed by the decoded strings: two stored
      // keys that decode alike (lone surrogates, each U+FFFD × 3) become one
      // entry, at the first one's place. kv.list() yields both.
      return { ok: api === 'SyncKvStorage' ? rows : [...new Map(rows.map((k) => [k, 1])).keys()] };
    } catch (err) {
      return { error: [err.name, err.message] };
    }
  };
  const expected = opts.map((o) => ({ sync: local(o, 'SyncKvStorage'), async: local(o, 'DurableObjectStorage') }));
  t.is(answers.length, opts.length);
  t.deepEqual(answers, expected);
});
