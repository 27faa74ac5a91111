'use strict';
// `durable-workers serve [entry]`: a Wrangler project's Worker and Durable
// Objects on Node (js/do/serve.js), until SIGINT or SIGTERM.
const { parse, withUsage, UsageError } = require('./args');

/** Exit codes of this command; 0, 1 and 2 mean what they mean for every command. */
const EXIT = Object.freeze({ OK: 0, FAILED: 1, USAGE: 2, OWNED: 3 });

const help = `usage: durable-workers serve [entry] [--config <file>] [--dir <dir>] [--port <n>] [--host <addr>]
                              [--max-open-files <n>] [--archive <dir> [--archive-retain <d>]]

Runs a Wrangler project's Worker and its Durable Objects in this Node
process: the config's Durable Object bindings (SQLite-backed for
"new_sqlite_classes") and vars (with .dev.vars over them) become env; HTTP
goes to the entry's default export fetch(request, env, ctx). Prints
"ready on <url>" once listening. SIGINT or SIGTERM stops accepting, lets the
requests in flight finish, closes the objects and exits 0; a second signal
ends the process at once (what was acknowledged is on disk either way).
WebSocket upgrades go to fetch() too: a 101 answer with a webSocket is
completed, and open sockets are closed with 1001 when the server stops.

  [entry]           the Worker module, .js or .mjs, or .ts/.mts (compiled
                    with esbuild as Wrangler does; without it, stripped
                    where Node can); default: "main" in the config
  --config <file>   wrangler.json, wrangler.jsonc or wrangler.toml (default:
                    searched from the current directory upwards)
  --dir <dir>       the durable directory the objects live in (default .data)
  --port <n>        the HTTP port (default 8787; 0 picks a free one)
  --host <addr>     the address to listen on (default 127.0.0.1)
  --max-open-files <n>
                    object files kept open at most (default 128): past it,
                    the least recently used idle objects close theirs until
                    their next event (each open file holds about three
                    descriptors and SQLite's memory)
  --archive <dir>   ship every commit to this directory as it commits, over
                    a base copy taken at start and daily: restorable to any
                    moment with durable-workers restore --at (docs/backups.md)
  --archive-retain <d>
                    how far back the archive keeps (default 7d; s, m, h, d)

While it serves, \`durable-workers backup <dir> <dest>\` takes a snapshot
through the directory's control socket.

exit codes:
  0  stopped by SIGINT or SIGTERM
  1  the project cannot be served (the message says what to change), the
     entry failed to load, or the port is in use
  2  usage error
  3  another process serves <dir> (ERR_DURABLE_LOCKED)`;

/**
 * `serve [entry] [--config F] [--dir D] [--port N] [--host H] [--max-open-files N] [--archive D [--archive-retain T]]`.
 * @param {string[]} args the arguments after `serve`
 * @param {{ stdout: NodeJS.WritableStream, stderr: NodeJS.WritableStream }} io
 * @returns {Promise<number>} the exit code (see EXIT), once stopped
 */
async function run(args, io) {
  return withUsage(help, io, async () => {
    const { values, positionals } = parse(args, {
      config: { type: 'string' },
      dir: { type: 'string' },
      port: { type: 'string' },
      host: { type: 'string' },
      'max-open-files': { type: 'string' },
      archive: { type: 'string' },
      'archive-retain': { type: 'string' },
    });
    if (positionals.length > 1) throw new UsageError(`serve takes at most one entry module (got ${positionals.join(' ')})`);
    const port = portOption(values.port);
    if (values.host === '') throw new UsageError('--host must not be empty');
    const maxOpenFiles = values['max-open-files'] === undefined ? undefined : Number(values['max-open-files']);
    if (maxOpenFiles !== undefined && !(Number.isInteger(maxOpenFiles) && maxOpenFiles >= 1 && values['max-open-files'].trim() !== '')) {
      throw new UsageError(`--max-open-files must be a whole number >= 1 (got ${JSON.stringify(values['max-open-files'])})`);
    }
    values.maxOpenFiles = maxOpenFiles;
    if (values['archive-retain'] !== undefined && values.archive === undefined) throw new UsageError('--archive-retain needs --archive <dir>');
    if (values.archive === '') throw new UsageError('--archive must name a directory');
    values.archiveOption = archiveOption(values);
    // Signals are ours from before startup: one arriving while the objects
    // open stops the server as soon as it exists. Once each, so a second
    // signal gets Node's default and ends the process.
    let signalled;
    const signal = new Promise((resolve) => (signalled = resolve));
    process.once('SIGINT', signalled);
    process.once('SIGTERM', signalled);
    try {
      return await start(positionals[0], values, port, io, signal);
    } finally {
      process.off('SIGINT', signalled);
      process.off('SIGTERM', signalled);
    }
  });
}

async function start(entry, values, port, io, signal) {
  const { serve } = require('../do/serve');
  let server;
  try {
    server = await serve({ entry, config: values.config, dir: values.dir, port, host: values.host, maxOpenFiles: values.maxOpenFiles, archive: values.archiveOption });
  } catch (err) {
    return failure(err, values, io);
  }
  for (const w of server.warnings) io.stderr.write(`durable-workers serve: warning: ${w}\n`);
  // An app's promise rejected with no handler is logged, as workerd logs it,
  // rather than ending the server (Node's default): nothing acknowledged
  // depends on it.
  const unhandled = (err) => io.stderr.write(`durable-workers serve: Uncaught (in promise) ${err?.stack ?? err}\n`);
  process.on('unhandledRejection', unhandled);
  io.stdout.write(`ready on ${server.url}\n`);
  try {
    await signal;
    await server.close();
  } finally {
    process.off('unhandledRejection', unhandled);
  }
  return EXIT.OK;
}

/** The exit code for a startup failure, and its message on stderr. */
function failure(err, values, io) {
  const say = (text) => io.stderr.write(`durable-workers serve: ${text}\n`);
  if (err?.code === 'ERR_DURABLE_LOCKED') {
    say(`${err.code}: ${err.message}\nStop the process that serves it, or pass another --dir.`);
    return EXIT.OWNED;
  }
  if (typeof err?.code === 'string' && err.code.startsWith('ERR_DURABLE_')) {
    say(`${err.code}: ${err.message}`);
    return EXIT.FAILED;
  }
  if (err?.code === 'EADDRINUSE' || err?.code === 'EACCES' || err?.code === 'EADDRNOTAVAIL') {
    say(err.message);
    return EXIT.FAILED;
  }
  // The app's own module failed to load: its stack is the useful part.
  say(err?.cause !== undefined ? `${err.message}\n${err.cause?.stack ?? err.cause}` : (err?.stack ?? String(err)));
  return EXIT.FAILED;
}

/** `--archive <dir> [--archive-retain <d>]`: the archive option, checked as serve() would check it. */
function archiveOption(values) {
  if (values.archive === undefined) return undefined;
  const retain = values['archive-retain'];
  // A bare number is milliseconds, as the option takes it.
  const option = { to: values.archive, ...(retain !== undefined && { retain: /^\d+$/.test(retain) ? Number(retain) : retain }) };
  try {
    require('../api/options').archive(option, values.dir ?? '.data', 'full', '--archive');
  } catch (err) {
    throw new UsageError(
      err.message
        .replace(/^--archive: archive\.retain/, '--archive-retain')
        .replace(/^--archive: archive\.to/, '--archive')
        .replace('outside dir', 'outside --dir'),
    );
  }
  return option;
}

/** `--port`: 0 to 65535 (0: the system picks; "ready on" says which). */
function portOption(text) {
  if (text === undefined) return 8787;
  const n = Number(text);
  if (text.trim() === '' || !Number.isInteger(n) || n < 0 || n > 65535) throw new UsageError(`--port must be a whole number from 0 to 65535 (got ${JSON.stringify(text)})`);
  return n;
}

module.exports = { name: 'serve', summary: 'a Wrangler project (Worker + Durable Objects) on Node, over HTTP', help, run, EXIT };
