'use strict';
// The command dispatcher. A command is one module exporting
//   { name, summary, help, run(args, io) → Promise<exit code> }
// and one line in COMMANDS; nothing else changes to add one.
// Exit codes: 0 success, 1 the command ran and failed (a failed run, a
// failed conformance check), 2 a usage error; for commands given a durable
// directory, 3 a process owns it (ERR_DURABLE_LOCKED) and 4 it is not one.
// One command a line, so adding one is a one-line change.
const COMMANDS = [
  require('./backup'),
  require('./build-addon'),
  require('./conformance'),
  require('./inspect'),
  require('./peek'),
  require('./repair'),
  require('./restore'),
  require('./serve'),
  require('./shop'),
  require('./top'),
  require('./workerd'),
];

function overview() {
  const width = Math.max(...COMMANDS.map((c) => c.name.length));
  return [
    'usage: durable-workers <command> [options]',
    '',
    'commands:',
    ...COMMANDS.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    '',
    'durable-workers <command> --help   the options of one command',
  ].join('\n');
}

/**
 * @param {string[]} argv the arguments after the program name
 * @param {{ stdout?: NodeJS.WritableStream, stderr?: NodeJS.WritableStream }} [io]
 * @returns {Promise<number>} the exit code
 */
async function main(argv, io = {}) {
  const out = { stdout: io.stdout ?? process.stdout, stderr: io.stderr ?? process.stderr };
  const [name, ...rest] = argv;
  if (name === '--help' || name === '-h' || name === 'help') {
    const c = COMMANDS.find((x) => x.name === rest[0]);
    out.stdout.write(`${c ? c.help : overview()}\n`);
    return 0;
  }
  const command = COMMANDS.find((c) => c.name === name);
  if (command === undefined) {
    out.stderr.write(`${name === undefined ? 'no command given' : `unknown command ${JSON.stringify(name)}`}\n\n${overview()}\n`);
    return 2;
  }
  if (rest.length === 1 && (rest[0] === '--help' || rest[0] === '-h')) {
    out.stdout.write(`${command.help}\n`);
    return 0;
  }
  return command.run(rest, out);
}

module.exports = { main, COMMANDS };
