'use strict';
// runConformance: the assertions, then a check of every declared field,
// against one adapter. Assertions are the contract; declarations are where
// adapters may differ, so only their truth is tested.
const { createWorkerHost } = require('../host');
const { Harness } = require('./harness');
const { assertions, envMint } = require('./assertions');
const { declarations } = require('./declarations');
const { formatReport } = require('./table');

/** Reads a dotted field ('run.memoryMb') of the declaration, for the report. */
function declared(d, field) {
  return field
    .split(', ')
    .map((f) => JSON.stringify(f.split('.').reduce((o, k) => o?.[k], d)))
    .join(', ');
}

/**
 * @param {import('../../../peek').ConformanceOptions} options
 * @returns {Promise<import('../../../peek').ConformanceReport>}
 */
async function runConformance({ adapter, mintCredential = envMint, only, out, onCheck } = {}) {
  if (!adapter || typeof adapter !== 'object' || !adapter.declares) throw new TypeError('runConformance({ adapter }): adapter must be a PlatformAdapter');
  const started = Date.now();
  // Assertion 9 reads an operator's setting: the host's settings source is part of the contract.
  const host = createWorkerHost({ adapter, settings: (name) => (name === 'probe-api' ? { greeting: `hi-${h.nonce}` } : undefined) });
  const h = new Harness({ host, adapter });
  // The probes that use the store need a credential; the walk mints its own.
  const undo = [await mintCredential('probe-hello', `peek-conformance-${h.nonce}`), await mintCredential('probe-counter', `peek-conformance-${h.nonce}`)];
  const report = { adapter: adapter.declares.name, ok: true, ms: 0, assertions: [], declarations: [] };
  const want = (key) => only === undefined || only.some((o) => key.includes(o));
  const attempt = async (check, ...args) => {
    const t0 = Date.now();
    try {
      return { ...(await check(...args)), ms: Date.now() - t0 };
    } catch (err) {
      return { ok: false, observed: `the check threw: ${err?.stack ?? err}`, ms: Date.now() - t0 };
    }
  };
  try {
    if (adapter.start) await adapter.start();
    for (const a of assertions) {
      if (!want(`assertion ${a.id}`)) continue;
      const row = { id: a.id, name: a.name, ...(await attempt(a.check, h, { mintCredential })) };
      report.assertions.push(row);
      onCheck?.(row);
    }
    for (const d of declarations) {
      if (!want(d.field)) continue;
      const row = { field: d.field, declared: declared(adapter.declares, d.field), ...(await attempt(d.check, h, adapter.declares)) };
      report.declarations.push(row);
      onCheck?.(row);
    }
  } finally {
    for (const u of undo) await u?.();
    await host.close();
    h.close();
  }
  report.ok = [...report.assertions, ...report.declarations].every((r) => r.ok);
  report.ms = Date.now() - started;
  if (out) out.write(`${formatReport(report)}\n`);
  return report;
}

module.exports = { runConformance, formatReport };
