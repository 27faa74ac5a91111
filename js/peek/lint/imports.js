'use strict';
// The imports a parsed file names with a literal, and the node-import rule
// over them. The same list drives the walk of the module graph (./graph.js),
// so what the rule sees is what the walk follows.
const { builtinModules } = require('node:module');
const walk = require('acorn-walk');
const { isRefused } = require('../node/refused');

const BUILTIN = new Set(builtinModules);

/**
 * @typedef {{ specifier: string, how: 'import' | 're-export' | 'import()' | 'require()', line: number, column: number }} ImportRef
 */

/**
 * Every static import and re-export, and every import() and require() whose
 * argument is a literal string, in source order.
 * @param {import('acorn').Program} ast
 * @returns {ImportRef[]}
 */
function importsOf(ast) {
  const found = [];
  const add = (specifier, how, node) => found.push({ specifier, how, line: node.loc.start.line, column: node.loc.start.column + 1 });
  walk.simple(ast, {
    ImportDeclaration: (node) => add(node.source.value, 'import', node),
    ExportNamedDeclaration: (node) => node.source && add(node.source.value, 're-export', node),
    ExportAllDeclaration: (node) => add(node.source.value, 're-export', node),
    ImportExpression: (node) => {
      const s = literal(node.source);
      if (s !== null) add(s, 'import()', node);
    },
    CallExpression: (node) => {
      if (node.callee.type !== 'Identifier' || node.callee.name !== 'require' || node.arguments.length !== 1) return;
      const s = literal(node.arguments[0]);
      if (s !== null) add(s, 'require()', node);
    },
  });
  return found.sort((a, b) => a.line - b.line || a.column - b.column);
}

/** A string literal's value, or a template literal's without substitutions; else null. */
function literal(node) {
  if (node.type === 'Literal' && typeof node.value === 'string') return node.value;
  if (node.type === 'TemplateLiteral' && node.expressions.length === 0) return node.quasis[0].value.cooked;
  return null;
}

/** Whether `specifier` names a Node built-in module (node:anything, or a bare built-in name). */
function isBuiltin(specifier) {
  return specifier.startsWith('node:') || BUILTIN.has(specifier);
}

// What to use instead, by module: the api where it has the thing, the web
// platform otherwise.
const NETWORK = new Set(['net', 'tls', 'http', 'https', 'http2', 'dgram', 'dns', 'dns/promises']);
const PROCESS = new Set(['child_process', 'cluster', 'worker_threads']);
const FILES = new Set(['fs', 'fs/promises']);

function hintFor(name) {
  if (NETWORK.has(name)) return 'use fetch, allowed by capabilities.network.domains';
  if (FILES.has(name)) return 'use api.datastore / api.network';
  if (PROCESS.has(name)) return 'a run is one call of the entry: do the work there, or in another worker sent a command';
  return 'use a web API such as fetch, URL, TextEncoder or crypto.subtle, or a package bundled with the worker';
}

/**
 * node-import findings for one file's imports.
 * @param {ImportRef[]} imports
 * @returns {{ rule: string, severity: 'error' | 'warning', line: number, column: number, message: string, hint: string }[]}
 */
function nodeImportFindings(imports) {
  const out = [];
  for (const imp of imports) {
    if (!isBuiltin(imp.specifier)) continue;
    const name = imp.specifier.startsWith('node:') ? imp.specifier.slice(5) : imp.specifier;
    const what = `${imp.how} of ${imp.specifier}`;
    // A refused module fails the run on Node too (ERR_PEEK_IMPORT_REFUSED):
    // that is an error, not a portability warning.
    const refused = isRefused(imp.specifier);
    out.push({
      rule: 'node-import',
      severity: refused ? 'error' : 'warning',
      line: imp.line,
      column: imp.column,
      message: refused ? `${what}: refused on every Peek host, Node included (ERR_PEEK_IMPORT_REFUSED)` : `${what}: not available on every target`,
      hint: hintFor(name),
    });
  }
  return out;
}

module.exports = { importsOf, isBuiltin, nodeImportFindings };
