'use strict';
// Finding the entry function in the worker's own file, for its first
// parameter: that is the api, whatever the author named it. Only the forms
// people write are followed (an exported function or arrow, a name exported
// later, module.exports / exports assignments); anything else leaves the
// rules with the name `api`.

/**
 * The entry's first parameter: an identifier's name, or a destructuring
 * pattern (whose keys are namespaces), or null when not found.
 * @param {import('acorn').Program} ast
 * @param {string | undefined} entry manifest.worker.entry (undefined: the default export)
 * @returns {{ name: string } | { pattern: import('acorn').ObjectPattern } | null}
 */
function entryParam(ast, entry) {
  const fn = findEntry(ast, entry ?? 'default');
  const param = fn?.params?.[0];
  if (param === undefined) return null;
  const target = param.type === 'AssignmentPattern' ? param.left : param;
  if (target.type === 'Identifier') return { name: target.name };
  if (target.type === 'ObjectPattern') return { pattern: target };
  return null;
}

function findEntry(ast, name) {
  const top = topLevel(ast);
  for (const node of ast.body) {
    if (node.type === 'ExportNamedDeclaration') {
      const d = node.declaration;
      if (d?.type === 'FunctionDeclaration' && d.id.name === name) return d;
      if (d?.type === 'VariableDeclaration') {
        for (const v of d.declarations) if (v.id.type === 'Identifier' && v.id.name === name && isFunction(v.init)) return v.init;
      }
      for (const s of node.specifiers ?? []) {
        if (node.source === null && exportedName(s) === name) return top.get(s.local.name) ?? null;
      }
    }
    if (node.type === 'ExportDefaultDeclaration' && name === 'default') {
      const d = node.declaration;
      if (isFunction(d) || d.type === 'FunctionDeclaration') return d;
      if (d.type === 'Identifier') return top.get(d.name) ?? null;
    }
    // CommonJS: module.exports = fn, module.exports = { name }, exports.name = fn.
    if (node.type === 'ExpressionStatement' && node.expression.type === 'AssignmentExpression') {
      const { left, right } = node.expression;
      const value = right.type === 'Identifier' ? (top.get(right.name) ?? right) : right;
      if (isModuleExports(left)) {
        if (name === 'default' && isFunction(value)) return value;
        if (value.type === 'ObjectExpression') {
          for (const p of value.properties) {
            if (p.type === 'Property' && keyName(p) === name) return isFunction(p.value) ? p.value : p.value.type === 'Identifier' ? (top.get(p.value.name) ?? null) : null;
          }
        }
      }
      if (left.type === 'MemberExpression' && keyName(left) === name && (isModuleExports(left.object) || isIdent(left.object, 'exports')) && isFunction(value)) return value;
    }
  }
  return null;
}

/** Top-level function declarations and `const f = () => …`, by name. */
function topLevel(ast) {
  const map = new Map();
  for (let node of ast.body) {
    if (node.type === 'ExportNamedDeclaration' && node.declaration) node = node.declaration;
    if (node.type === 'FunctionDeclaration' && node.id) map.set(node.id.name, node);
    if (node.type === 'VariableDeclaration') {
      for (const v of node.declarations) if (v.id.type === 'Identifier' && isFunction(v.init)) map.set(v.id.name, v.init);
    }
  }
  return map;
}

function isFunction(node) {
  return node?.type === 'FunctionExpression' || node?.type === 'ArrowFunctionExpression' || node?.type === 'FunctionDeclaration';
}

function isIdent(node, name) {
  return node?.type === 'Identifier' && node.name === name;
}

function isModuleExports(node) {
  return node.type === 'MemberExpression' && isIdent(node.object, 'module') && keyName(node) === 'exports';
}

/** A member's or property's name when it is written out (a.b, a['b'], { b: … }), else null. */
function keyName(node) {
  const key = node.type === 'MemberExpression' ? node.property : node.key;
  if (!node.computed && key.type === 'Identifier') return key.name;
  if (key.type === 'Literal' && typeof key.value === 'string') return key.value;
  return null;
}

function exportedName(specifier) {
  const e = specifier.exported;
  return e.type === 'Identifier' ? e.name : e.value;
}

module.exports = { entryParam, keyName };
