'use strict';
// Runs one scenario in a fresh Node process.
//
// Every scenario gets its own process so that one system's garbage, JIT state
// or open files never bill the other; so memory is measured from a clean
// start; so a scenario can run with LD_PRELOAD (the slow device); and so a
// scenario that hangs or crashes is killed and reported rather than taking
// the whole run down.
//
// Parent side: runInChild(). Child side: this file run with
//   node --expose-gc bench/child.js <module> <scenario> <json options>

const { fork } = require('node:child_process');
const path = require('node:path');

const TAIL_CHARS = 2000;

/**
 * @typedef {object} ScenarioResult
 * @property {number} [value]   the headline figure
 * @property {string} [unit]    its unit, e.g. 'calls/s'
 * @property {Record<string, unknown>} [notes] secondary figures
 * @property {{ message: string, code?: string, stack?: string }} [error] set when the scenario failed
 * @property {string[]} [warnings] things that went wrong around an otherwise valid figure
 */

/**
 * Forks a Node process that runs `scenarios[scenario](opts)` exported by
 * `module` and resolves with what it returned. Never rejects: a failure, a
 * crash or a timeout comes back as `{ error }`.
 *
 * @param {object} o
 * @param {string} o.module path of the scenario module (absolute or relative to bench/)
 * @param {string} o.scenario exported scenario name
 * @param {object} [o.opts] JSON-serialisable options passed to the scenario
 * @param {NodeJS.ProcessEnv} [o.env] environment of the child
 * @param {number} [o.timeoutMs=60000] the child is killed after this long
 * @param {number} [o.exitGraceMs=2000] how long a child may take to exit on its own after answering
 * @param {string} [o.execPath] the node binary to run it on (another Node line); this one by default
 * @returns {Promise<ScenarioResult>}
 */
function runInChild({ module, scenario, opts = {}, env = process.env, timeoutMs = 60_000, exitGraceMs = 2000, execPath = process.execPath }) {
  const modulePath = path.resolve(__dirname, module);
  return new Promise((resolve) => {
    const child = fork(__filename, [modulePath, scenario, JSON.stringify(opts)], {
      env,
      execPath,
      execArgv: ['--expose-gc'],
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    let output = '';
    const keepTail = (chunk) => {
      output = (output + chunk).slice(-TAIL_CHARS);
    };
    child.stdout.on('data', keepTail);
    child.stderr.on('data', keepTail);

    let result;
    let lingerTimer;
    const killTimer = setTimeout(() => {
      result = { error: { message: `timed out after ${timeoutMs / 1000} s${tail(output)}` } };
      child.kill('SIGKILL');
    }, timeoutMs);

    child.on('message', (message) => {
      result = message;
      // A scenario that closed everything it opened lets its process exit on
      // its own; one that does not exit has left something running.
      lingerTimer = setTimeout(() => {
        (result.warnings ??= []).push(`process still running ${exitGraceMs} ms after the scenario finished; killed`);
        child.kill('SIGKILL');
      }, exitGraceMs);
    });
    child.on('error', (err) => {
      result ??= { error: { message: err.message } };
    });
    child.on('close', (code, signal) => {
      clearTimeout(killTimer);
      clearTimeout(lingerTimer);
      if (!result) {
        const how = signal ? `signal ${signal}` : `exit code ${code}`;
        result = { error: { message: `child process died (${how}) before answering${tail(output)}` } };
      }
      resolve(result);
    });
  });
}

/** The last lines of a child's output, for an error message. */
function tail(output) {
  const lines = output.trim().split('\n').slice(-8).join('\n');
  return lines ? `\n${lines}` : '';
}

/** Plain-object form of an error that survives IPC. */
function describeError(err) {
  if (!(err instanceof Error)) return { message: String(err) };
  return { message: err.message, code: err.code, name: err.name, stack: err.stack };
}

async function childMain() {
  const [modulePath, scenario, optsJson] = process.argv.slice(2);
  let message;
  try {
    const fn = require(modulePath).scenarios?.[scenario];
    if (typeof fn !== 'function') throw new Error(`${modulePath} has no scenario "${scenario}"`);
    message = await fn(JSON.parse(optsJson));
  } catch (err) {
    message = { error: describeError(err) };
  }
  // Disconnecting lets the process exit once the scenario's own handles are gone.
  process.send(message, () => process.disconnect());
}

if (require.main === module) childMain();

module.exports = { runInChild, describeError };
