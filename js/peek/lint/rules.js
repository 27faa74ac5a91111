'use strict';
// The rules read off one file's syntax tree: module-timer, window, eval and
// ungranted-api (node-import works on the import list, ./imports.js). Each
// is a syntactic check, not an analysis of what runs: a name shadowed by a
// local variable is still taken for the global.
const walk = require('acorn-walk');
const { keyName } = require('./entry');
const { namespaceProblem } = require('./namespaces');

const TIMERS = new Set(['setTimeout', 'setInterval']);
/** Names the global object goes by in a worker. */
const GLOBAL = new Set(['globalThis', 'self', 'window']);

/**
 * @typedef {{ rule: string, severity: 'error' | 'warning', line: number, column: number, message: string, hint: string }} RawFinding
 */

/**
 * @param {import('acorn').Program} ast
 * @param {{
 *   manifest: import('../../../peek').Manifest,
 *   apiName?: string,
 *   apiPattern?: import('acorn').ObjectPattern,
 * }} options apiName / apiPattern: the entry's first parameter, in the worker's own file
 * @returns {RawFinding[]}
 */
function astFindings(ast, { manifest, apiName, apiPattern }) {
  const out = [];
  const at = (node, rule, message, hint) => out.push({ rule, severity: 'warning', line: node.loc.start.line, column: node.loc.start.column + 1, message, hint });
  // `api` by convention, `app` the global the host installs (registrations
  // at the top level go through it), unless the file binds the name itself.
  const apiNames = new Set(['api', 'app'].filter((name) => !binds(ast, name)));
  if (apiName) apiNames.add(apiName);
  const checkNamespace = (name, node) => {
    const problem = name === null ? null : namespaceProblem(name, manifest);
    if (problem) at(node, 'ungranted-api', problem.message, problem.hint);
  };
  const checkPattern = (pattern) => {
    for (const p of pattern.properties) if (p.type === 'Property') checkNamespace(keyName(p), p.key);
  };
  if (apiPattern) checkPattern(apiPattern);

  walk.ancestor(ast, {
    CallExpression(node, _state, ancestors) {
      const callee = node.callee;
      const timer = globalName(callee);
      if (TIMERS.has(timer)) {
        if (atModuleLevel(ancestors)) {
          at(
            node,
            'module-timer',
            `${timer} at module level: the module is loaded again for every run, and between runs the platform may freeze or drop it, so the timer does not outlive the run`,
            'start it inside the entry function and await it or hand it to ctx.waitUntil; for work every n minutes, use the manifest\'s "schedule"',
          );
        }
        if (node.arguments[0]?.type === 'Literal' && typeof node.arguments[0].value === 'string') {
          at(node, 'eval', `${timer} with a string of code: code built from strings is refused on Cloudflare`, 'pass a function');
        }
      }
      if (timer === 'eval') at(node, 'eval', 'eval(): code built from strings is refused on Cloudflare', 'write the code out; for data, use JSON.parse');
      if (timer === 'Function') at(node, 'eval', 'Function(): code built from strings is refused on Cloudflare', 'write the function out');
    },
    NewExpression(node) {
      if (globalName(node.callee) === 'Function') at(node, 'eval', 'new Function(): code built from strings is refused on Cloudflare', 'write the function out');
    },
    MemberExpression(node, _state, ancestors) {
      const obj = node.object;
      if (obj.type === 'Identifier' && obj.name === 'window') {
        const name = keyName(node);
        if (name !== 'app') {
          at(node, 'window', `window.${name ?? '[…]'}: a Peek host's window has only window.app`, 'use the api, which window.app is, or a web API on globalThis');
        }
      }
      const parent = ancestors[ancestors.length - 2];
      if (isApi(obj, apiNames) && !presenceCheck(node, parent)) checkNamespace(keyName(node), node);
    },
    Identifier(node, _state, ancestors) {
      if (node.name !== 'window') return;
      const parent = ancestors[ancestors.length - 2];
      if (parent?.type === 'MemberExpression' && parent.object === node) return; // window.x: the member's check
      if (parent?.type === 'UnaryExpression' && parent.operator === 'typeof') return; // feature detection, harmless
      at(node, 'window', "window used as a value: a Peek host's window has only window.app, and other targets may have no window at all", 'pass the api or window.app instead');
    },
    VariableDeclarator(node) {
      // const { datastore, log } = api
      if (node.id.type === 'ObjectPattern' && node.init && isApi(node.init, apiNames)) checkPattern(node.id);
    },
  });
  return out;
}

/** `name` for `name` and for globalThis.name / self.name / window.name; else null. */
function globalName(node) {
  if (node.type === 'Identifier') return node.name;
  if (node.type === 'MemberExpression' && node.object.type === 'Identifier' && GLOBAL.has(node.object.name)) return keyName(node);
  return null;
}

/** An api identifier, or window.app / globalThis.app. */
function isApi(node, apiNames) {
  if (node.type === 'Identifier') return apiNames.has(node.name);
  return node.type === 'MemberExpression' && node.object.type === 'Identifier' && GLOBAL.has(node.object.name) && keyName(node) === 'app';
}

/** `typeof api.x`, `api.x?.…`, `if (api.x)`, `api.x && …`, `!api.x`: the worker checks before it uses. */
function presenceCheck(node, parent) {
  if (parent === undefined) return false;
  switch (parent.type) {
    case 'UnaryExpression':
      return parent.operator === 'typeof' || parent.operator === '!';
    case 'MemberExpression':
    case 'CallExpression':
      return parent.optional === true && (parent.object ?? parent.callee) === node;
    case 'IfStatement':
    case 'ConditionalExpression':
      return parent.test === node;
    case 'LogicalExpression':
      return parent.left === node;
    default:
      return false;
  }
}

/** Not inside any function body, nor an instance field's initializer (evaluated per object, not at load). */
function atModuleLevel(ancestors) {
  return !ancestors.some((n) => n.type === 'FunctionDeclaration' || n.type === 'FunctionExpression' || n.type === 'ArrowFunctionExpression' || (n.type === 'PropertyDefinition' && !n.static));
}

/** Whether the file binds `name` itself at top level (an import, a const): then `name` there is not the worker's api. */
function binds(ast, name) {
  for (let node of ast.body) {
    if (node.type === 'ImportDeclaration' && node.specifiers.some((s) => s.local.name === name)) return true;
    if (node.type === 'ExportNamedDeclaration' && node.declaration) node = node.declaration;
    if ((node.type === 'FunctionDeclaration' || node.type === 'ClassDeclaration') && node.id?.name === name) return true;
    if (node.type === 'VariableDeclaration') {
      // const api = window.app is still the api.
      for (const v of node.declarations) if (v.id.type === 'Identifier' && v.id.name === name && !(v.init && isApi(v.init, new Set()))) return true;
    }
  }
  return false;
}

module.exports = { astFindings };
