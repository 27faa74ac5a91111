#!/usr/bin/env node
'use strict';
// What storing a value costs the JS thread in each of the codec's formats
// (js/state/codec.js): encoding (for JSON, the plain-data check included) and
// decoding a document of the benchmark's kind (scenarios.js docOf) and a
// shop cart, as JSON text and as V8 structured-clone bytes; and what one
// crossing as an argument or result costs, `structuredClone` against the
// walk for plain data (js/state/clone.js). docs/internals.md (Values)
// quotes these figures.
//
//   node bench/codec.js [--values N]

const v8 = require('node:v8');
const { parseArgs } = require('node:util');
const { encodeValue, decode, TAG_JSON, TAG_V8 } = require('../js/state/codec');
const { structuredCopy } = require('../js/state/clone');
const { docOf } = require('./scenarios');
const { median } = require('./measure');
const { renderTable, formatMicros, formatRatio } = require('./table');

const where = () => 'bench';
const MAX = 1024 * 1024;

/** The values encoded: each kind as many times as asked, all distinct. */
function valuesOf(kind, n) {
  return Array.from({ length: n }, (_, i) =>
    kind === 'doc'
      ? docOf(i)
      : {
          items: [
            { sku: `sku-${i}`, qty: 2, price: 120 },
            { sku: 'pear', qty: 1, price: 90 },
          ],
          orders: i,
        },
  );
}

/** Median µs per value of `f` over `values`, in 7 rounds after 2 of warm-up. */
function perValue(values, f) {
  const rounds = [];
  for (let r = 0; r < 9; r++) {
    const t0 = process.hrtime.bigint();
    for (const v of values) f(v);
    if (r >= 2) rounds.push(Number(process.hrtime.bigint() - t0) / 1000 / values.length);
  }
  return median(rounds);
}

function measure({ values = 2000 } = {}) {
  const rows = [];
  for (const kind of ['doc', 'cart']) {
    const vs = valuesOf(kind, values);
    const json = vs.map((v) => encodeValue(v, where, MAX));
    if (json.some((e) => e.tag !== TAG_JSON)) throw new Error(`${kind}: expected plain data`);
    const clones = vs.map((v) => v8.serialize(v));
    rows.push({
      kind,
      bytes: { json: json[0].bytes.length, v8: clones[0].length },
      encode: { json: perValue(vs, (v) => encodeValue(v, where, MAX)), v8: perValue(vs, (v) => v8.serialize(v)) },
      decode: { json: perValue(json, (e) => decode(TAG_JSON, e.bytes, where)), v8: perValue(clones, (b) => decode(TAG_V8, b, where)) },
      clone: { structured: perValue(vs, (v) => structuredClone(v)), walk: perValue(vs, (v) => structuredCopy(v)) },
    });
  }
  return { values, rows };
}

function report(r) {
  const name = { doc: 'a 100-byte document (docOf)', cart: 'a cart of two lines' };
  return [
    `Codec: µs per value on the JS thread, median of 7 rounds of ${r.values} values`,
    '',
    renderTable(
      ['value', 'bytes JSON / clone', 'encode JSON', 'encode clone', 'decode JSON', 'decode clone', 'decode: clone ÷ JSON', 'crossing: structuredClone', 'crossing: walk'],
      r.rows.map((x) => [
        name[x.kind],
        `${x.bytes.json} / ${x.bytes.v8}`,
        formatMicros(x.encode.json),
        formatMicros(x.encode.v8),
        formatMicros(x.decode.json),
        formatMicros(x.decode.v8),
        formatRatio(x.decode.v8 / x.decode.json),
        formatMicros(x.clone.structured),
        formatMicros(x.clone.walk),
      ]),
      ['left', 'right', 'right', 'right', 'right', 'right', 'right', 'right', 'right'],
    ),
  ].join('\n');
}

if (require.main === module) {
  const { values } = parseArgs({ options: { values: { type: 'string', default: '2000' } } });
  console.log(report(measure({ values: Number(values.values) })));
}

module.exports = { measure, report };
