'use strict';
// `api` across a process boundary. The parent describes the api object it
// built as a tree of plain data (which functions exist, at which paths); the
// run's process builds a look-alike whose functions send a message naming the
// path and wait for the answer. Only the shape crosses, so nothing the
// parent's functions close over (the store, and the credential under it) is
// ever in the run's process: there is nothing there to find.
const { ONE_WAY, LOCAL, isData } = require('./api');

/**
 * @param {object} api
 * @returns {object} a structured-clonable description
 */
function describeShape(api, path = []) {
  const props = {};
  for (const key of Object.keys(api)) {
    const v = api[key];
    if (typeof v === 'function') props[key] = describeFunction(v, [...path, key]);
    else if (isData(v)) props[key] = { kind: 'data', value: v };
    else if (v && typeof v === 'object') props[key] = describeShape(v, [...path, key]);
    else props[key] = { kind: 'value', value: v };
  }
  return { kind: 'object', props };
}

function describeFunction(fn, path) {
  const node = { kind: 'function', path, oneWay: fn[ONE_WAY] === true, local: fn[LOCAL] ?? null };
  const own = Object.keys(fn);
  if (own.length > 0) node.props = describeShape(fn, path).props;
  return node;
}

/**
 * Builds the look-alike in the run's process.
 * @param {object} shape from describeShape
 * @param {{ call: (path: string[], args: unknown[]) => Promise<unknown>, cast: (path: string[], args: unknown[]) => void, locals: Record<string, Function> }} io
 */
function buildFromShape(shape, io) {
  const out = {};
  for (const [key, node] of Object.entries(shape.props)) out[key] = buildNode(node, io);
  return Object.freeze(out);
}

function buildNode(node, io) {
  if (node.kind === 'value') return node.value;
  if (node.kind === 'data') return deepFreeze(node.value);
  if (node.kind === 'object') return buildFromShape(node, io);
  let fn;
  if (node.local !== null) {
    fn = io.locals[node.local];
    if (typeof fn !== 'function') throw new Error(`the run's realm has no local ${node.local}`);
  } else if (node.oneWay) {
    const { path } = node;
    fn = (...args) => io.cast(path, args);
  } else {
    const { path } = node;
    fn = (...args) => io.call(path, args);
  }
  if (node.props) {
    // A function with namespaces on it (api.log.warn): copy onto a fresh
    // function so a local one is not mutated.
    const base = fn;
    fn = (...args) => base(...args);
    for (const [key, child] of Object.entries(node.props)) fn[key] = buildNode(child, io);
  }
  return Object.freeze(fn);
}

function deepFreeze(o) {
  if (o && typeof o === 'object') {
    for (const v of Object.values(o)) deepFreeze(v);
    Object.freeze(o);
  }
  return o;
}

/** The function at `path` of the parent's api, or null. */
function functionAt(api, path) {
  let v = api;
  for (const key of path) {
    if (v === null || (typeof v !== 'object' && typeof v !== 'function') || !Object.hasOwn(v, key)) return null;
    v = v[key];
  }
  return typeof v === 'function' ? v : null;
}

module.exports = { describeShape, buildFromShape, functionAt };
