'use strict';
// `durable-workers workerd <module>`: the module's DurableWorker classes on a
// local workerd (the pinned npm package), one Durable Object namespace per
// exported class, SQLite storage on disk, HTTP to the module's fetch handler.
const path = require('node:path');
const { parse, withUsage, intOption, UsageError } = require('./args');

const help = `usage: durable-workers workerd <module> [--port <n>] [--dir <dir>] [--allow-local-network] [--verbose]

Bundles <module> with esbuild for workerd, writes the workerd config and runs
the workerd binary of the pinned npm package (workerd 1.20261117.1). Every
exported class extending DurableWorker becomes a Durable Object namespace
(binding and class named after it) with SQLite storage on local disk; HTTP on
127.0.0.1:<port> goes to the module's fetch(request, env, ctx) handler (use
hostOf(env).get(Class, id) from durable-workers/cloudflare there). Runs until
SIGINT or SIGTERM, then stops workerd and exits 0.

  --port <n>              the HTTP port (default 8787)
  --dir <dir>             where the bundle, the config and the objects' SQLite
                          files go (default .durable-workers/workerd)
  --allow-local-network   let fetch() reach private and loopback addresses
  --verbose               workerd's own --verbose`;

async function run(args, io) {
  return withUsage(help, io, async () => {
    const { values, positionals } = parse(args, {
      port: { type: 'string' },
      dir: { type: 'string' },
      'allow-local-network': { type: 'boolean' },
      verbose: { type: 'boolean' },
    });
    if (positionals.length !== 1) throw new UsageError(positionals.length === 0 ? 'workerd needs the module to run' : `workerd takes one module (got ${positionals.join(' ')})`);
    const port = intOption(values, 'port') ?? 8787;
    if (port > 65535) throw new UsageError('--port must be at most 65535');
    // Signals are ours from here on, before workerd exists: one during the
    // build or the start stops whatever has started, and exits 0.
    let signalled;
    const signal = new Promise((resolve) => (signalled = resolve));
    const onSignal = () => signalled('signal');
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
    try {
      return await serve(values, positionals, port, io, signal);
    } finally {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    }
  });
}

async function serve(values, positionals, port, io, signal) {
  const { buildWorkerd, startWorkerd, WORKERD_VERSION } = require('../cloudflare');
  const dir = path.resolve(values.dir ?? path.join('.durable-workers', 'workerd'));
  const built = await buildWorkerd({
    module: positionals[0],
    outDir: path.join(dir, 'build'),
    dataDir: path.join(dir, 'data'),
    port,
    allowLocalNetwork: values['allow-local-network'] === true,
  });
  io.stdout.write(`workerd ${WORKERD_VERSION}: ${built.classes.map((c) => c.name).join(', ') || 'no DurableWorker classes'} from ${positionals[0]}\n`);
  const w = await startWorkerd({ config: built.config, port, verbose: values.verbose, onOutput: (line) => io.stderr.write(`workerd: ${line}\n`) });
  io.stdout.write(`listening on ${w.url} (storage in ${path.join(dir, 'data')}); Ctrl-C to stop\n`);
  const why = await Promise.race([signal, w.exited.then(() => 'exit')]);
  if (why === 'exit') {
    io.stderr.write('workerd exited on its own\n');
    return 1;
  }
  await w.stop();
  io.stdout.write('workerd stopped\n');
  return 0;
}

module.exports = { name: 'workerd', summary: 'run a module of durable workers on a local workerd (Cloudflare Durable Objects)', help, run };
