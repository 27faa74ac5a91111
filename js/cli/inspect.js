'use strict';
// `durable-workers inspect <dir>`: what a durable directory holds, read from
// its catalog by js/tools/inspect.js. That takes the directory's lock like any
// owner, so a directory a process is serving is not read from here (never
// mid-write): the serving process is asked instead, over its control socket
// (js/control/), and the output says the summary came from it. Only when that
// process cannot be reached is it refused (exit 3), saying why, because
// "locked" alone reads like a fault when it is the directory doing its job.
const fs = require('node:fs');
const path = require('node:path');
const { parse, withUsage, UsageError } = require('./args');

/** Exit codes of this command; 0, 1 and 2 mean what they mean for every command. */
const EXIT = Object.freeze({ OK: 0, FAILED: 1, USAGE: 2, OWNED: 3, NOT_DURABLE: 4 });

const DEFAULT_ALARMS = 10;

const help = `usage: durable-workers inspect <dir> [--json] [--alarms <n>]

Prints what a durable directory holds: its classes, the workers of each and
their bytes on disk, the registry's size, and the pending alarms with the
earliest due times. Reads the catalog under the directory's lock; while a
process serves the directory, asks that process instead, over its control
socket, and says so ("live").

  --json          print the summary as JSON (bytes as numbers, times as epoch ms and ISO)
  --alarms <n>    list the <n> earliest pending alarms (default ${DEFAULT_ALARMS}; 0 lists none)

exit codes:
  0  printed
  1  the directory could not be read (ERR_DURABLE_CORRUPT, ERR_DURABLE_IO)
  2  usage error
  3  a process owns the directory (ERR_DURABLE_LOCKED) and could not be
     reached over its control socket (the message says why); nothing was read
  4  <dir> is not a durable directory (missing, or no _registry.db)`;

/**
 * `inspect <dir> [--json] [--alarms N]`.
 * @param {string[]} args the arguments after `inspect`
 * @param {{ stdout: NodeJS.WritableStream, stderr: NodeJS.WritableStream }} io
 * @returns {Promise<number>} the exit code (see EXIT)
 */
async function run(args, io) {
  return withUsage(help, io, async () => {
    const { values, positionals } = parse(args, { json: { type: 'boolean' }, alarms: { type: 'string' } });
    if (positionals.length !== 1) throw new UsageError(positionals.length === 0 ? 'inspect needs a directory' : `inspect takes one directory (got ${positionals.join(' ')})`);
    const alarms = countOption(values.alarms);
    const dir = path.resolve(positionals[0]);

    // Checked here, not left to inspect(): its ERR_DURABLE_CORRUPT would also
    // cover a registry that exists and is damaged, and a typo deserves its
    // own exit code and a plainer message than "corrupt".
    const why = notDurable(dir);
    if (why !== null) {
      io.stderr.write(`durable-workers inspect: ${why}\n`);
      return EXIT.NOT_DURABLE;
    }

    const { inspect } = require('../tools/inspect');
    let summary;
    try {
      summary = await inspect(dir, { alarms });
    } catch (err) {
      if (err?.code === 'ERR_DURABLE_LOCKED') {
        const live = await fromOwner(dir, alarms);
        if (live.summary === undefined) {
          io.stderr.write(
            `durable-workers inspect: a process owns ${dir} (ERR_DURABLE_LOCKED), and it could not be asked:\n  ${live.why}\n` +
              'A durable directory has one owner; inspect reads it itself only when no process is serving it,\n' +
              'so it never sees a half-written commit. Run it again once that process has closed the directory.\n',
          );
          return EXIT.OWNED;
        }
        summary = live.summary;
      } else if (typeof err?.code === 'string' && err.code.startsWith('ERR_DURABLE_')) {
        io.stderr.write(`durable-workers inspect: ${err.code}: ${err.message}\n`);
        return EXIT.FAILED;
      } else {
        throw err;
      }
    }

    io.stdout.write(values.json ? `${JSON.stringify(toJson(summary), null, 2)}\n` : render(summary, Date.now()));
    return EXIT.OK;
  });
}

/**
 * The summary from the process serving `dir`, over its control socket; or
 * why it could not be had (no control socket, another user's, gone).
 * @returns {Promise<{ summary?: object, why?: string }>}
 */
async function fromOwner(dir, alarms) {
  const { connect } = require('../control/client');
  let client;
  try {
    client = await connect(dir);
    return { summary: await client.request('summary', { alarms }) };
  } catch (err) {
    return { why: `${err.code}: ${err.message}` };
  } finally {
    client?.close();
  }
}

/** `--alarms`: a whole number, 0 allowed (only the count is wanted). */
function countOption(text) {
  if (text === undefined) return DEFAULT_ALARMS;
  const n = Number(text);
  if (text.trim() === '' || !Number.isInteger(n) || n < 0) throw new UsageError(`--alarms must be a whole number, 0 or more (got ${JSON.stringify(text)})`);
  return n;
}

/** Why `dir` is not a durable directory, or null if it looks like one. */
function notDurable(dir) {
  let stat;
  try {
    stat = fs.statSync(dir);
  } catch {
    return `${dir} does not exist`;
  }
  if (!stat.isDirectory()) return `${dir} is not a directory`;
  if (!fs.existsSync(path.join(dir, '_registry.db'))) return `${dir} is not a durable directory (it has no _registry.db; open({ dir }) makes one)`;
  return null;
}

/** The summary for scripts: totals added, each alarm's time also as ISO. */
function toJson(s) {
  return {
    dir: s.dir,
    live: s.owner !== undefined,
    ...(s.owner === undefined ? {} : { owner: s.owner }),
    workers: s.classes.reduce((n, c) => n + c.workers, 0),
    bytes: s.classes.reduce((n, c) => n + c.bytes, 0) + s.registryBytes,
    registryBytes: s.registryBytes,
    classes: s.classes,
    alarms: { count: s.alarms.count, next: s.alarms.next.map((a) => ({ ...a, due: new Date(a.at).toISOString() })) },
  };
}

/** The summary for people: a table of classes, then the alarms. */
function render(s, now) {
  const lines = [s.dir, ...(s.owner === undefined ? [] : [`  live: asked the process serving it (pid ${s.owner.pid}) over its control socket`]), ''];
  if (s.classes.length === 0) {
    lines.push('  no workers yet');
  } else {
    const rows = [['class', 'workers', 'files', 'on disk'], ...s.classes.map((c) => [c.name, fmt(c.workers), fmt(c.files), bytes(c.bytes)])];
    const total = s.classes.reduce((a, c) => ({ workers: a.workers + c.workers, files: a.files + c.files, bytes: a.bytes + c.bytes }), { workers: 0, files: 0, bytes: 0 });
    if (s.classes.length > 1) rows.push(['total', fmt(total.workers), fmt(total.files), bytes(total.bytes)]);
    lines.push(...table(rows, 'lrrr'));
  }
  lines.push('', `  registry  ${bytes(s.registryBytes)} (the catalog of workers and the alarm index)`, '');

  const { count, next } = s.alarms;
  lines.push(`  pending alarms: ${fmt(count)}`);
  if (next.length > 0) {
    const rows = next.map((a) => [new Date(a.at).toISOString(), relative(a.at - now), `${a.class} ${JSON.stringify(a.id)}`]);
    lines.push(...table(rows, 'lll').map((l) => `  ${l}`));
    if (count > next.length) lines.push(`    … and ${fmt(count - next.length)} more (--alarms <n> lists more)`);
  }
  return `${lines.join('\n')}\n`;
}

/**
 * Columns two spaces apart, each aligned as `align` says ('l' or 'r' per column).
 * @param {string[][]} rows
 * @param {string} align
 */
function table(rows, align) {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  return rows.map((r) => `  ${r.map((cell, i) => (align[i] === 'r' ? cell.padStart(widths[i]) : cell.padEnd(widths[i]))).join('  ')}`.trimEnd());
}

/** 1536 → "1.5 KiB": binary units, as `du -h` and file managers count. */
function bytes(n) {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  let v = n;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return i === 0 ? `${n} B` : `${v < 10 ? v.toFixed(1) : Math.round(v)} ${units[i]}`;
}

/** A due time relative to now: "in 3m", "in 2h 5m", "40s ago" (an overdue alarm nobody is firing). */
function relative(ms) {
  const s = Math.round(Math.abs(ms) / 1000);
  let text;
  if (s < 60) text = `${s}s`;
  else if (s < 3600) text = `${Math.floor(s / 60)}m`;
  else if (s < 86400) text = `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
  else text = `${Math.floor(s / 86400)}d ${Math.floor((s % 86400) / 3600)}h`;
  return ms >= 0 ? `in ${text}` : `${text} ago`;
}

function fmt(n) {
  return n.toLocaleString('en-US');
}

module.exports = { name: 'inspect', summary: 'what a durable directory holds: classes, workers, bytes, pending alarms', help, run, EXIT, bytes, relative, notDurable };
