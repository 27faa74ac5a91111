'use strict';
// The import refusal on a Node without module.registerHooks (before 22.15),
// without a loader thread. module.register's hooks run in a thread of their
// own, and starting it is 30–45 ms of every cold run's boot here: most of
// what a cold run adds over a bare `node`. A worker's ESM graph is fixed by
// its source text except for import(), so instead this walks the static
// graph in the child's own thread just before the worker is imported,
// resolving each specifier with Node's own resolver (import.meta.resolve with
// a parent, --experimental-import-meta-resolve), and throws the refusal for
// the first network module found, naming it and its importer, before any of
// the worker's code has run. Whatever the walk cannot follow (an import() of
// any kind, a data: module, a file the lexer cannot read) installs the
// loader thread after all, before anything of the worker loads, so it costs
// time, never the refusal. CommonJS require() stays with the Module._load
// wrapper (child.js), which also hands every file it loads to the walk: an
// ES module loaded by require(), or an import() in a CommonJS file, is
// covered too. Like the hooks it replaces, this is a guard rail against the
// honest mistake, not a sandbox (docs/peek.md).
const fs = require('node:fs');
const path = require('node:path');
const { fileURLToPath } = require('node:url');
const lexer = require('es-module-lexer');
const { isRefused, refusal } = require('./refused');

// Files whose imports the ESM loader does not follow.
const OPAQUE = new Set(['.json', '.node', '.wasm']);

class ImportScan {
  #resolve;
  #fallback;
  #seen = new Set();
  #hooked = false;

  /**
   * @param {(specifier: string, parentURL: string) => string} resolve Node's ESM resolution
   * @param {(why: string) => void} fallback installs the loader hooks; called at most once
   */
  constructor(resolve, fallback) {
    this.#resolve = resolve;
    this.#fallback = fallback;
  }

  /** Loads the lexer (compiles its wasm); before the first scan. */
  async init() {
    await lexer.init();
  }

  /** Whether the loader hooks were installed (the walk met something it cannot follow). */
  get hooked() {
    return this.#hooked;
  }

  /**
   * Walks the static graph from `url` (a module about to load). Throws
   * ERR_PEEK_IMPORT_REFUSED for a refused import; installs the hooks for
   * anything it cannot follow. Each module is read once per process.
   * @param {string} url
   */
  scan(url) {
    const stack = [url];
    while (stack.length && !this.#hooked) {
      const at = stack.pop();
      if (this.#seen.has(at)) continue;
      this.#seen.add(at);
      if (at.startsWith('node:')) continue;
      if (!at.startsWith('file:')) return this.fallBack(`${at.slice(0, 40)} is not a file`);
      const file = fileURLToPath(at);
      if (OPAQUE.has(path.extname(file))) continue;
      let source;
      try {
        source = fs.readFileSync(file, 'utf8');
      } catch {
        continue; // Node's own import reports a missing or unreadable file
      }
      let imports;
      try {
        [imports] = lexer.parse(source, file);
      } catch {
        return this.fallBack(`${at} did not lex`);
      }
      for (const imp of imports) {
        if (imp.type === 'import-meta') continue;
        if (imp.type === 'dynamic' || imp.phase !== null || imp.specifier === undefined) {
          return this.fallBack(`${at} has an import()`);
        }
        if (imp.typeOnly) continue;
        const specifier = imp.specifier;
        if (isRefused(specifier)) throw refusal(specifier, at, 'import');
        let resolved;
        try {
          resolved = this.#resolve(specifier, at);
        } catch {
          continue; // unresolvable: the import itself fails, naming it
        }
        // A package's "imports" or "exports" may map a name onto a node: module.
        if (isRefused(resolved)) throw refusal(specifier, at, 'import');
        stack.push(resolved);
      }
    }
  }

  /** Installs the loader hooks instead (once); the walk stops. */
  fallBack(why) {
    if (this.#hooked) return;
    this.#hooked = true;
    this.#fallback(why);
  }
}

module.exports = { ImportScan };
