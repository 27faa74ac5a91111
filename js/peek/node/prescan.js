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
// the worker's code has run.
//
// What the walk cannot see installs the loader thread after all, before the
// module that needs it loads: an import() (or the text `import(` anywhere, a
// string handed to eval or new Function included), a data: module, a file it
// cannot read or lex, or characters the lexer does not take for white space
// where V8 does. It costs time, never the refusal, and the walk goes on over
// the rest of the static graph, which the hooks do not see when a module is
// loaded by require(). CommonJS require() stays with the Module._load wrapper
// (child.js), which hands every file it loads to the walk too. Like the hooks
// it replaces, this is a guard rail against the honest mistake, not a sandbox
// (docs/peek.md).
const fs = require('node:fs');
const path = require('node:path');
const { fileURLToPath, pathToFileURL } = require('node:url');
const lexer = require('es-module-lexer');
const { isRefused, refusal } = require('./refused');

// Files whose imports the ESM loader does not follow.
const OPAQUE = new Set(['.json', '.node', '.wasm']);
// Any import( in the text, even in a string: code built at run time
// (new Function('s', 'return import(s)'), as compiled TypeScript does) is
// invisible to a lexer.
const DYNAMIC = /\bimport\s*\(/;
// White space to V8 that es-module-lexer does not skip: next to an import,
// the lexer reports nothing (and no error) while V8 loads it.
const UNLEXED_SPACE = /[\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]/;

class ImportScan {
  #resolve;
  #fallback;
  #seen = new Set();
  /** url → the real file's URL: every require() hands its file here, most of them seen before. */
  #real = new Map();
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

  /** Whether the loader hooks were installed (the walk met something it cannot see). */
  get hooked() {
    return this.#hooked;
  }

  /**
   * Walks the static graph from `url` (a module about to load). Throws
   * ERR_PEEK_IMPORT_REFUSED for a refused import; installs the hooks for
   * anything it cannot see, and goes on. A module is read once per process,
   * unless its walk was refused: then the next load walks it again.
   * @param {string} url
   */
  scan(url) {
    const added = [];
    try {
      this.#walk(url, added);
    } catch (err) {
      // A refusal can be caught (try { require(x) } catch {}): a second
      // load of the same module must meet it again.
      for (const at of added) this.#seen.delete(at);
      throw err;
    }
  }

  #walk(url, added) {
    let real = this.#real.get(url);
    if (real === undefined) this.#real.set(url, (real = realURL(url)));
    const stack = [real];
    while (stack.length) {
      const at = stack.pop();
      if (this.#seen.has(at)) continue;
      this.#seen.add(at);
      added.push(at);
      if (at.startsWith('node:')) continue;
      if (!at.startsWith('file:')) {
        this.fallBack(`${at.slice(0, 40)} is not a file`);
        continue;
      }
      const file = fileURLToPath(at);
      if (OPAQUE.has(path.extname(file))) continue;
      let source;
      try {
        source = fs.readFileSync(file, 'utf8');
      } catch {
        this.fallBack(`${at} could not be read`);
        continue;
      }
      // A leading byte-order mark is common and harmless; V8 skips it.
      if (source.charCodeAt(0) === 0xfeff) source = source.slice(1);
      if (DYNAMIC.test(source)) this.fallBack(`${at} has an import()`);
      if (UNLEXED_SPACE.test(source)) this.fallBack(`${at} has white space the lexer does not read`);
      let imports;
      try {
        [imports] = lexer.parse(source, file);
      } catch {
        this.fallBack(`${at} did not lex`);
        continue;
      }
      for (const imp of imports) {
        if (imp.type === 'import-meta') continue;
        if (imp.type === 'dynamic' || imp.phase !== null || typeof imp.specifier !== 'string') {
          this.fallBack(`${at} has an import the walk cannot follow`);
          continue;
        }
        const specifier = imp.specifier;
        if (isRefused(specifier)) throw refusal(specifier, at, 'import');
        let resolved;
        try {
          resolved = this.#resolve(specifier, at);
        } catch {
          continue; // unresolvable: the import itself fails, naming it
        }
        // A package's "imports" or "exports" may map a name onto a node: module.
        if (isRefused(resolved)) throw refusal(specifier, at, 'import', resolved);
        stack.push(resolved);
      }
    }
  }

  /** Installs the loader hooks (once). The walk itself goes on. */
  fallBack(why) {
    if (this.#hooked) return;
    this.#hooked = true;
    this.#fallback(why);
  }
}

/** The URL of the real file: Node loads a symlinked entry from where it points, and resolves its imports from there. */
function realURL(url) {
  if (!url.startsWith('file:')) return url;
  try {
    const u = new URL(url);
    const real = pathToFileURL(fs.realpathSync(fileURLToPath(u)));
    real.search = u.search;
    return real.href;
  } catch {
    return url;
  }
}

module.exports = { ImportScan };
