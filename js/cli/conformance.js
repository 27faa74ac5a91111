'use strict';
// `durable-workers conformance`: the Peek conformance suite against the Node
// adapter, in a scratch directory. Exit 1 if any check fails.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { parse, withUsage, intOption, UsageError } = require('./args');

const help = `usage: durable-workers conformance [--json] [--only <text>]… [--memory-mb <n>] [--verbose]

Runs the Peek conformance suite against the Node adapter: the 8 assertions of
the host contract and a check of every field the adapter declares. Prints a
table (or, with --json, the report). Exit 0 when every check passes, 1 when
one fails, 2 on a usage error. Takes about 25 s.

  --json          print the report as JSON
  --only <text>   run only checks whose name contains <text> (repeatable)
  --memory-mb <n> the adapter's memory ceiling per run (default 128)
  --verbose       print the workers' log records to stderr`;

async function run(args, io) {
  return withUsage(help, io, async () => {
    const { values, positionals } = parse(args, {
      json: { type: 'boolean' },
      only: { type: 'string', multiple: true },
      'memory-mb': { type: 'string' },
      verbose: { type: 'boolean' },
    });
    if (positionals.length > 0) throw new UsageError(`conformance takes no arguments (got ${positionals.join(' ')})`);
    const { nodeAdapter, runConformance } = require('../peek');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'peek-conformance-state-'));
    const log = values.verbose ? (r) => io.stderr.write(`[${r.worker}] ${r.level}: ${r.args.map(String).join(' ')}\n`) : () => {};
    const adapter = nodeAdapter({ dir, log, memoryMb: intOption(values, 'memory-mb') });
    let report;
    try {
      report = await runConformance({ adapter, only: values.only, out: values.json ? undefined : io.stdout });
    } finally {
      await adapter.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
    if (values.json) io.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
    return report.ok ? 0 : 1;
  });
}

module.exports = { name: 'conformance', summary: 'check the Node adapter against the Peek host contract', help, run };
