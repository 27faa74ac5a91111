'use strict';
// The worker's module graph, read statically: from manifest.worker.path
// through every literal import, export-from, import() and require() that
// resolves to a JavaScript file of the worker's own package: the directory
// the sandbox ships (../node/bundle.js packageRoot). Dependencies under
// node_modules are named, not read: they are their authors' code, and a
// bundler's output is what a worker ships to other targets anyway.
const fs = require('node:fs');
const path = require('node:path');
const { createRequire } = require('node:module');
const { fileURLToPath } = require('node:url');
const { packageRoot } = require('../node/bundle');
const { parseSource } = require('./parse');
const { importsOf, isBuiltin } = require('./imports');

const SOURCE = new Set(['.js', '.mjs', '.cjs']);
/** Files read at most: a worker is a few files; a graph larger than this is not a worker's own code. */
const MAX_FILES = 2000;

/**
 * @typedef {{
 *   file: string,
 *   ast?: import('acorn').Program,
 *   error?: { line: number, column: number, message: string },
 *   imports: import('./imports').ImportRef[],
 * }} GraphFile
 */

/**
 * Reads and parses every file of the worker's own graph, the entry first.
 * @param {string} entryFile the worker module (manifest.worker.path)
 * @returns {{ files: GraphFile[], packages: string[] }} packages: the bare
 *   specifiers imported from outside the worker's package, by package name
 */
function moduleGraph(entryFile) {
  const start = fs.realpathSync(entryFile);
  const root = packageRoot(start);
  const files = [];
  const packages = new Set();
  const seen = new Set([start]);
  const queue = [start];
  while (queue.length > 0 && files.length < MAX_FILES) {
    const file = queue.shift();
    let source;
    try {
      source = fs.readFileSync(file, 'utf8');
    } catch {
      continue; // unreadable: the run fails on it, naming it; nothing to lint
    }
    const parsed = parseSource(source, file);
    if ('error' in parsed) {
      files.push({ file, error: parsed.error, imports: [] });
      continue;
    }
    const imports = importsOf(parsed.ast);
    files.push({ file, ast: parsed.ast, imports });
    for (const { specifier } of imports) {
      if (isBuiltin(specifier)) continue;
      const target = resolve(specifier, file);
      const own = target !== null && inside(root, target) && !target.split(path.sep).includes('node_modules');
      if (own) {
        if (SOURCE.has(path.extname(target)) && !seen.has(target)) {
          seen.add(target);
          queue.push(target);
        }
      } else if (!isPath(specifier)) {
        packages.add(packageName(specifier));
      }
    }
  }
  return { files, packages: [...packages].sort() };
}

/** The real file `specifier` names from `parent`, or null when it does not resolve. */
function resolve(specifier, parent) {
  try {
    // CommonJS resolution: relative paths with or without an extension,
    // a package's self-reference and "imports" (#name), node_modules. An
    // export only an `import` condition maps does not resolve: such a
    // package is named, not followed, which is what happens to packages anyway.
    const request = specifier.startsWith('file:') ? fileURLToPath(specifier) : specifier;
    return fs.realpathSync(createRequire(parent).resolve(request));
  } catch {
    return null;
  }
}

function inside(root, file) {
  const rel = path.relative(fs.realpathSync(root), file);
  return rel !== '' && !rel.startsWith('..') && !path.isAbsolute(rel);
}

function isPath(specifier) {
  return specifier.startsWith('.') || specifier.startsWith('/') || specifier.startsWith('file:') || specifier.startsWith('#');
}

/** lodash/fp → lodash, @scope/pkg/x → @scope/pkg. */
function packageName(specifier) {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

module.exports = { moduleGraph };
