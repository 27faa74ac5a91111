'use strict';
// `durable-workers conformance`: the Peek conformance suite against one
// adapter, in a scratch directory, with a line per check as it finishes.
// Exit 1 if any check fails.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { parse, withUsage, intOption, UsageError } = require('./args');

const ADAPTERS = ['node', 'workerd', 'container'];

const help = `usage: durable-workers conformance [--adapter node|workerd|container] [--json] [--only <text>]… [--memory-mb <n>] [--verbose]

Runs the Peek conformance suite against an adapter: the assertions of the host
contract and a check of every field the adapter declares. Prints a line per
check as it finishes (on stderr), then a table (or, with --json, the report).
Exit 0 when every check passes, 1 when one fails, 2 on a usage error. Takes
about 30 s.

  --adapter <a>   node (default): the Node adapter; container: the same adapter
                  declaring the container target (run it inside the image);
                  workerd: the workerd adapter on the pinned local workerd
  --json          print the report as JSON
  --only <text>   run only checks whose name contains <text> (repeatable)
  --memory-mb <n> the Node adapter's memory ceiling per run (default 128)
  --verbose       print the workers' log records to stderr`;

/** The adapter under test and how a credential is handed to a probe. */
function adapterFor(kind, dir, { log, memoryMb }) {
  if (kind === 'workerd') {
    const { cloudflareAdapter } = require('../cloudflare');
    const { PROBES } = require('../peek/conformance/harness');
    // The probes talk to servers the suite starts on loopback.
    const adapter = cloudflareAdapter({ dir, workers: PROBES, allowLocalNetwork: true, log });
    return { adapter, mintCredential: (name, value) => adapter.putSecret(name, value) };
  }
  const { nodeAdapter } = require('../peek');
  return { adapter: nodeAdapter({ dir, log, memoryMb, target: kind }), mintCredential: undefined };
}

async function run(args, io) {
  return withUsage(help, io, async () => {
    const { values, positionals } = parse(args, {
      adapter: { type: 'string' },
      json: { type: 'boolean' },
      only: { type: 'string', multiple: true },
      'memory-mb': { type: 'string' },
      verbose: { type: 'boolean' },
    });
    if (positionals.length > 0) throw new UsageError(`conformance takes no arguments (got ${positionals.join(' ')})`);
    const kind = values.adapter ?? 'node';
    if (!ADAPTERS.includes(kind)) throw new UsageError(`--adapter must be one of ${ADAPTERS.join(', ')} (got ${kind})`);
    const memoryMb = intOption(values, 'memory-mb');
    if (memoryMb !== undefined && kind === 'workerd') throw new UsageError('--memory-mb is the Node adapter’s: workerd sets no memory ceiling per run');
    const { runConformance } = require('../peek');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'peek-conformance-state-'));
    const log = values.verbose ? (r) => io.stderr.write(`[${r.worker}] ${r.level}: ${r.args.map(String).join(' ')}\n`) : () => {};
    const { adapter, mintCredential } = adapterFor(kind, dir, { log, memoryMb });
    const onCheck = (row) => {
      const what = row.id === undefined ? `declaration ${row.field}` : `assertion ${row.id} ${row.name}`;
      io.stderr.write(`${row.ok ? 'pass' : 'FAIL'}  ${what} (${(row.ms / 1000).toFixed(1)} s)\n`);
    };
    io.stderr.write(`conformance of the ${kind} adapter: a line per check as it finishes\n`);
    let report;
    try {
      report = await runConformance({ adapter, mintCredential, only: values.only, onCheck, out: values.json ? undefined : io.stdout });
    } finally {
      await adapter.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
    if (values.json) io.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
    return report.ok ? 0 : 1;
  });
}

module.exports = { name: 'conformance', summary: 'check a Peek adapter (node, workerd, container) against the host contract', help, run };
