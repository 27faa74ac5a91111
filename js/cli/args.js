'use strict';
// Option parsing for commands: node:util parseArgs, strict, with a usage
// error (exit 2) that names the problem and shows the command's help.
const { parseArgs } = require('node:util');

class UsageError extends Error {}

/**
 * @param {string[]} args
 * @param {Record<string, { type: 'string' | 'boolean', multiple?: boolean, short?: string }>} options
 * @returns {{ values: Record<string, any>, positionals: string[] }}
 */
function parse(args, options) {
  try {
    return parseArgs({ args, options: { help: { type: 'boolean', short: 'h' }, ...options }, allowPositionals: true, strict: true });
  } catch (err) {
    throw new UsageError(err.message);
  }
}

/** Runs a command body, turning a UsageError into its message, the help, and exit code 2. */
async function withUsage(help, io, body) {
  try {
    return await body();
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    io.stderr.write(`${err.message}\n\n${help}\n`);
    return 2;
  }
}

/** A positive integer option, or undefined. */
function intOption(values, name) {
  if (values[name] === undefined) return undefined;
  const n = Number(values[name]);
  if (!Number.isInteger(n) || n <= 0) throw new UsageError(`--${name} must be a positive integer`);
  return n;
}

module.exports = { parse, withUsage, intOption, UsageError };
