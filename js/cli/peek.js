'use strict';
// `durable-workers peek run <manifest>`, `durable-workers peek serve <dir>`,
// `durable-workers peek lint <manifest>` and `durable-workers peek logs <worker>`.
const path = require('node:path');
const { parse, withUsage, intOption, UsageError } = require('./args');
const { logs, logsHelp } = require('./peek-logs');
const { printable } = require('./top-view');

const COMMON = `  --state <dir>          where schedules and the embedded store live
  --credentials <file>   JSON { "<worker>": "<credential>" }, mode 600
                         (or set PEEK_CREDENTIAL_<WORKER>); "-": read that JSON
                         from stdin once, so neither the path nor the values
                         are in this process's command line or environment
  --sandbox <mode>       auto (default): each run in a sandbox of its own
                         where bubblewrap can make one (Linux): its own PID,
                         mount, IPC and network namespaces, no network, no
                         file of this process, a uid of its own when run as
                         root; required: refuse to start without it; off
  --run-as <uid[:gid]>   without the sandbox, run each worker's process as
                         this user (and group): it then cannot read this
                         process's environment, command line, memory or
                         credentials file (needs root)
  --store-url <url>      use a remote HTTP store instead of the embedded one
  --memory-mb <n>        memory ceiling of a run's process (default 128)
  --settings <file>      the operator's values for the workers' settings,
                         { "<worker>": { "<setting>": value } }, read at
                         every run (docs/peek.md)
  --target <t>           node (default) or container: what the adapter
                         declares (the image runs peek serve --target container)
  --strict               refuse to run (exit 1) if the worker linter has
                         findings; without it they are printed to stderr
  --json                 print JSON (one object per line for serve)`;

const runHelp = `usage: durable-workers peek run <manifest.json> [--trigger <t>] [--params <json>] [options]

Runs a worker once, in a fresh process, and prints its RunResult.
Exit 0 if the run succeeded, 1 if it failed, 2 on a usage error.

  --trigger <t>          schedule (default: due now), command:<name>, wake:<topic>
  --params <json>        the command's params, or the wake's message
  --state <dir>          default: <manifest dir>/.peek-state
${COMMON.split('\n').slice(1).join('\n')}`;

const serveHelp = `usage: durable-workers peek serve <dir-of-manifests> [--channel <ws-url>] [options]

The resident supervisor: keeps the schedule of every manifest in <dir>
(<dir>/<name>/manifest.json or <dir>/*.json) as durable alarms, runs commands
(cmd:execute:<command>) and wakes from the channel, one run of a worker at a
time. Prints each run and log record. Stops on SIGINT or SIGTERM.

  --channel <ws-url>     the pubsub hub; without it, an in-process bus
  --state <dir>          default: <dir>/.peek-state
${COMMON.split('\n').slice(1).join('\n')}`;

const lintHelp = `usage: durable-workers peek lint <manifest.json> [--strict] [--json]

Reads the worker's own files (its module graph, from worker.url; packages
under node_modules are named, not read) and prints what will not run the
same on every Peek host, one line each: file:line:column rule message (hint).

  node-import    an import or require() of a Node built-in (node:fs, http, …)
  module-timer   setTimeout / setInterval at module level
  window         window used for anything but window.app
  eval           eval(), new Function(), a timer given a string of code
  ungranted-api  api.<namespace> the manifest does not grant
  parse          a file that does not parse

Exit 0 when there are no findings, or only warnings; 1 when there is an
error (a module every host refuses, a file that does not parse), or any
finding with --strict; 2 on a usage error.

  --strict               exit 1 on any finding
  --json                 print the findings as a JSON array`;

const help = `usage: durable-workers peek <run|serve|lint|logs> …

  peek run <manifest.json>     run a worker once
  peek serve <dir>             the resident supervisor
  peek lint <manifest.json>    what in a worker will not run on every host
  peek logs <worker>           the kept api.log records of its runs

durable-workers peek <run|serve|lint|logs> --help for options.`;

const optionSpec = {
  state: { type: 'string' },
  credentials: { type: 'string' },
  'store-url': { type: 'string' },
  'memory-mb': { type: 'string' },
  'run-as': { type: 'string' },
  sandbox: { type: 'string' },
  settings: { type: 'string' },
  target: { type: 'string' },
  strict: { type: 'boolean' },
  json: { type: 'boolean' },
};

function runAs(spec) {
  if (spec === undefined) return {};
  const m = /^(\d+)(?::(\d+))?$/.exec(spec);
  if (m === null) throw new UsageError(`--run-as ${spec}: use a numeric uid, or uid:gid`);
  return { uid: Number(m[1]), gid: Number(m[2] ?? m[1]) };
}

function sandboxMode(spec) {
  if (spec === undefined || spec === 'auto' || spec === 'required' || spec === 'off') return spec;
  throw new UsageError(`--sandbox ${spec}: use auto, required or off`);
}

/** --credentials -: the JSON from stdin, read once; stdin is closed after. */
async function credentialsFrom(values, io) {
  if (values.credentials === undefined) return undefined;
  if (values.credentials !== '-') return { file: path.resolve(values.credentials) };
  const { parseCredentials } = require('../peek/credentials');
  const input = io.stdin ?? process.stdin;
  let text = '';
  for await (const chunk of input) text += chunk;
  input.destroy?.();
  return { values: parseCredentials(text, 'stdin') };
}

async function adapterOptions(values, defaultState, log, io) {
  return {
    ...runAs(values['run-as']),
    dir: values.state ?? defaultState,
    credentials: await credentialsFrom(values, io),
    store: values['store-url'] ? { remoteUrl: values['store-url'] } : undefined,
    memoryMb: intOption(values, 'memory-mb'),
    sandbox: sandboxMode(values.sandbox),
    target: targetOf(values.target),
    log,
  };
}

function targetOf(spec) {
  if (spec === undefined || spec === 'node' || spec === 'container') return spec;
  throw new UsageError(`--target ${spec}: use node or container`);
}

/** The host's settings source: --settings <file>, read at every run. */
const hostOptions = (values) => (values.settings === undefined ? {} : { settings: path.resolve(values.settings) });

function printer(io, json) {
  const text = (v) => (typeof v === 'string' ? v : JSON.stringify(v));
  return {
    log: (r) => (json ? io.stdout.write(`${JSON.stringify({ event: 'log', ...r })}\n`) : io.stderr.write(`[${r.worker}] ${r.level}: ${r.args.map(text).join(' ')}\n`)),
    run: (e) => {
      const r = e.result;
      const line = { event: 'run', worker: e.worker, run: e.run, trigger: e.trigger, ok: r.ok, ms: r.ms, ...(r.ok ? { value: r.value } : { error: { code: r.error.code, message: r.error.message } }) };
      const number = e.run === null ? '' : ` run ${e.run}`;
      io.stdout.write(
        json ? `${JSON.stringify(line)}\n` : `${e.worker}${number} ${e.trigger.kind} ${r.ok ? 'ok' : 'FAILED'} in ${r.ms} ms: ${r.ok ? text(r.value) : `${r.error.code ?? ''} ${r.error.message}`}\n`,
      );
    },
  };
}

function parseTrigger(spec, params) {
  if (spec === undefined || spec === 'schedule') return { kind: 'schedule', scheduledFor: Date.now() };
  const [kind, ...rest] = spec.split(':');
  const name = rest.join(':');
  if (kind === 'command' && name) return { kind: 'command', name, params };
  if (kind === 'wake' && name) return { kind: 'wake', topic: name, message: params };
  throw new UsageError(`--trigger ${spec}: use schedule, command:<name> or wake:<topic>`);
}

async function runOnce(args, io) {
  const { values, positionals } = parse(args, { ...optionSpec, trigger: { type: 'string' }, params: { type: 'string' } });
  if (positionals.length !== 1) throw new UsageError('peek run takes one manifest');
  sandboxMode(values.sandbox);
  let params = null;
  if (values.params !== undefined) {
    try {
      params = JSON.parse(values.params);
    } catch (err) {
      throw new UsageError(`--params is not JSON: ${err.message}`);
    }
  }
  const trigger = parseTrigger(values.trigger, params);
  const { nodeAdapter, createWorkerHost, loadManifest } = require('../peek');
  const manifest = loadManifest(positionals[0]);
  if (!lintBeforeRun([manifest], values.strict, io)) return 1;
  const print = printer(io, values.json);
  // One run needs no spare waiting behind it.
  const adapter = nodeAdapter({ ...(await adapterOptions(values, path.join(manifest.dir, '.peek-state'), print.log, io)), warm: false });
  const host = createWorkerHost({ adapter, ...hostOptions(values) });
  host.on('run', print.run);
  try {
    const result = await host.run(manifest.manifestPath, trigger);
    return result.ok ? 0 : 1;
  } finally {
    await host.close();
    await adapter.close();
  }
}

async function serve(args, io) {
  const { values, positionals } = parse(args, { ...optionSpec, channel: { type: 'string' } });
  if (positionals.length !== 1) throw new UsageError('peek serve takes one directory of manifests');
  sandboxMode(values.sandbox);
  const dir = path.resolve(positionals[0]);
  // The manifests there now; one added later is linted by no one but `peek lint`.
  let found = [];
  try {
    found = require('../peek/supervisor').scanManifests(dir).manifests;
  } catch {
    // A directory that cannot be read is the supervisor's to report.
  }
  if (!lintBeforeRun(found, values.strict, io)) return 1;
  const { nodeAdapter, createWorkerHost, createSupervisor } = require('../peek');
  const print = printer(io, values.json);
  const adapter = nodeAdapter({ ...(await adapterOptions(values, path.join(dir, '.peek-state'), print.log, io)), channelUrl: values.channel });
  const host = createWorkerHost({ adapter, ...hostOptions(values) });
  host.on('run', print.run);
  const supervisor = createSupervisor({ dir, adapter, host, log: print.log });
  // Listening before start: a signal during start still closes cleanly.
  const stopped = new Promise((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  await supervisor.start();
  print.log({ level: 'info', worker: '(supervisor)', args: [`serving ${supervisor.manifests.size} worker(s) from ${dir}`] });
  const sb = adapter.sandbox;
  if (sb.on)
    print.log({ level: 'info', worker: '(supervisor)', args: [`runs are sandboxed (${sb.mode === 'root' ? 'a uid of their own each' : "this process's uid"}); network.enforcement: egress-control`] });
  else print.log({ level: 'warn', worker: '(supervisor)', args: [`runs are NOT sandboxed: ${sb.reason}; network.enforcement: guard-rail (docs/security.md says what the sandbox needs)`] });
  await stopped;
  await supervisor.close();
  return 0;
}

/**
 * Prints each manifest's lint findings to stderr, one line each, prefixed
 * with the worker's name. Returns false when `strict` and there are any:
 * the caller then runs nothing.
 */
function lintBeforeRun(manifests, strict, io) {
  const { lintReport, formatFinding } = require('../peek/lint');
  let total = 0;
  for (const manifest of manifests) {
    let findings;
    try {
      findings = lintReport(manifest).findings;
    } catch (err) {
      // The linter is advice: a worker it cannot read still runs (and fails on its own terms).
      io.stderr.write(`[${manifest.name}] lint: could not lint: ${err.message}\n`);
      continue;
    }
    // A finding quotes the worker's source (an import's specifier): escaped, it cannot drive the terminal.
    for (const f of findings) io.stderr.write(`[${manifest.name}] lint ${f.severity}: ${printable(formatFinding(f))}\n`);
    total += findings.length;
  }
  if (strict && total > 0) {
    io.stderr.write(`refusing to run: ${total} lint finding${total === 1 ? '' : 's'} (--strict); durable-workers peek lint <manifest.json> lists them\n`);
    return false;
  }
  return true;
}

async function lint(args, io) {
  const { values, positionals } = parse(args, { strict: { type: 'boolean' }, json: { type: 'boolean' } });
  if (positionals.length !== 1) throw new UsageError('peek lint takes one manifest');
  const { lintReport, formatFinding, formatSummary } = require('../peek/lint');
  const report = lintReport(positionals[0]);
  if (values.json) io.stdout.write(`${JSON.stringify(report.findings, null, 2)}\n`);
  else {
    for (const f of report.findings) io.stdout.write(`${printable(formatFinding(f))}\n`);
    io.stdout.write(`${report.manifest.name}: ${printable(formatSummary(report))}\n`);
  }
  const failing = values.strict ? report.findings : report.findings.filter((f) => f.severity === 'error');
  return failing.length > 0 ? 1 : 0;
}

async function run(args, io) {
  const [sub, ...rest] = args;
  const pick = { run: [runOnce, runHelp], serve: [serve, serveHelp], lint: [lint, lintHelp], logs: [logs, logsHelp] }[sub];
  if (pick === undefined) {
    io.stderr.write(`${sub === undefined ? 'peek needs a subcommand' : `unknown peek subcommand ${JSON.stringify(sub)}`}\n\n${help}\n`);
    return 2;
  }
  const [body, subHelp] = pick;
  if (rest.includes('--help') || rest.includes('-h')) {
    io.stdout.write(`${subHelp}\n`);
    return 0;
  }
  return withUsage(subHelp, io, async () => {
    try {
      return await body(rest, io);
    } catch (err) {
      // A refused manifest or credential is the user's to fix: say what, exit 1.
      if (typeof err?.code === 'string' && err.code.startsWith('ERR_')) {
        io.stderr.write(`${err.code}: ${err.message}\n`);
        return 1;
      }
      throw err;
    }
  });
}

module.exports = { name: 'peek', summary: 'run Peek workers: peek run <manifest>, peek serve <dir>, peek lint <manifest>, peek logs <worker>', help, run };
