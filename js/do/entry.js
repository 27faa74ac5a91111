'use strict';
// Importing a Worker's entry module, TypeScript included.
//
// A JavaScript entry is imported as it is. A TypeScript entry is compiled
// with esbuild (an optional peer dependency; Wrangler compiles with it too),
// which resolves what Wrangler resolves: imports without an extension
// (`./room`), every TypeScript syntax. Without esbuild, a Node that strips
// types (22.18 and later) imports it as it is, which takes only erasable
// syntax and imports that name their `.ts` files. The compiled module holds
// the app's own files; packages stay imports resolved from the project, and
// `cloudflare:` modules are left to ./register.js. It is written under the
// project's `.wrangler/tmp` (where Wrangler puts its own build, and from
// where the project's node_modules resolve), and removed once imported.

const fs = require('node:fs');
const path = require('node:path');
const { pathToFileURL } = require('node:url');
const { DurableError, codes } = require('../api/errors');

const TS = new Set(['.ts', '.mts']);

/**
 * Imports the entry module.
 * @param {string} entry its absolute path (.js, .mjs, .ts or .mts)
 * @param {string} root the project's directory (its Wrangler config's)
 * @param {{ esbuild?: () => object | null }} [o] esbuild: how to load esbuild (tests)
 * @returns {Promise<Record<string, unknown>>} the module's namespace
 * @throws {DurableError} ERR_DURABLE_CONFIG: a TypeScript entry with neither
 *   type stripping nor esbuild; or esbuild's errors, with their places
 */
async function importEntry(entry, root, o = {}) {
  const url = pathToFileURL(entry).href;
  if (!TS.has(path.extname(entry))) return import(url);
  const esbuild = (o.esbuild ?? loadEsbuild)();
  if (esbuild === null) {
    if (process.features.typescript) return import(url);
    throw new DurableError(
      codes.CONFIG,
      `${entry} is TypeScript, and Node ${process.version} cannot strip types: install esbuild (npm install --save-dev esbuild) to compile it, or use Node 22.18 or later`,
    );
  }
  const tmp = path.join(root, '.wrangler', 'tmp');
  fs.mkdirSync(tmp, { recursive: true });
  const out = fs.mkdtempSync(path.join(tmp, 'durable-workers-'));
  try {
    const outfile = path.join(out, `${path.basename(entry, path.extname(entry))}.mjs`);
    try {
      await esbuild.build({
        entryPoints: [entry],
        outfile,
        bundle: true,
        format: 'esm',
        platform: 'node',
        target: `node${process.versions.node}`,
        packages: 'external',
        external: ['cloudflare:*'],
        sourcemap: 'inline',
        logLevel: 'silent',
      });
    } catch (err) {
      const where = (err?.errors ?? []).map((e) => `${e.location ? `${e.location.file}:${e.location.line}:${e.location.column}: ` : ''}${e.text}`);
      throw new DurableError(codes.CONFIG, `esbuild could not compile ${entry}: ${where.length > 0 ? where.join('; ') : (err?.message ?? err)}`);
    }
    return await import(pathToFileURL(outfile).href);
  } finally {
    fs.rmSync(out, { recursive: true, force: true });
  }
}

/** esbuild, if installed; null if not. */
function loadEsbuild() {
  try {
    return require('esbuild');
  } catch (err) {
    if (err?.code === 'MODULE_NOT_FOUND') return null;
    throw err;
  }
}

module.exports = { importEntry, TS };
