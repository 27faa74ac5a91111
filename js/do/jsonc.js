'use strict';
// JSONC, the syntax of wrangler.json and wrangler.jsonc: JSON plus `//` and
// `/* */` comments and trailing commas in arrays and objects. Wrangler reads
// both file names the same way (jsonc-parser with allowTrailingComma, in
// workers-sdk packages/workers-utils/src/parse.ts `parseJSONC`).
//
// Guarantee: a file JSON.parse accepts gives JSON.parse's value (a
// `"__proto__"` key is an own property, the last of duplicate keys wins);
// comments and trailing commas are skipped; `//` inside a string is text. A
// syntax error is a DurableError ERR_DURABLE_CONFIG naming the file, line and
// column.
//
// Mechanism: a small recursive-descent parser rather than stripping comments
// and calling JSON.parse, because the position in V8's SyntaxError message is
// missing for some errors and worded differently across Node versions, and
// the line is what a user needs. Strings are checked here and decoded by
// JSON.parse, so escapes mean exactly what they mean in JSON.
const { DurableError, codes } = require('../api/errors');

const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
// JSON forbids raw control characters in a string: the class must name them.
// eslint-disable-next-line no-control-regex
const STRING = /"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"/y;
const LITERALS = [
  ['true', true],
  ['false', false],
  ['null', null],
];

/**
 * Parses JSON with comments and trailing commas.
 * @param {string} text the file's contents (a leading byte order mark is ignored)
 * @param {string} file named in errors
 * @returns {unknown}
 * @throws {DurableError} ERR_DURABLE_CONFIG, with `file:line:column` in the message
 */
function parseJsonc(text, file) {
  const p = { text, file, i: text.charCodeAt(0) === 0xfeff ? 1 : 0 };
  skip(p);
  if (p.i >= text.length) fail(p, 'the file holds no value');
  const value = parseValue(p);
  skip(p);
  if (p.i < text.length) fail(p, `unexpected ${describe(p)} after the value`);
  return value;
}

function parseValue(p) {
  const c = p.text[p.i];
  if (c === '{') return parseObject(p);
  if (c === '[') return parseArray(p);
  if (c === '"') return parseString(p);
  if (c === '-' || (c >= '0' && c <= '9')) {
    NUMBER.lastIndex = p.i;
    const m = NUMBER.exec(p.text);
    if (m === null) fail(p, 'invalid number');
    p.i += m[0].length;
    return Number(m[0]);
  }
  for (const [word, value] of LITERALS) {
    if (p.text.startsWith(word, p.i)) {
      p.i += word.length;
      return value;
    }
  }
  return fail(p, p.i >= p.text.length ? 'unexpected end of file, expected a value' : `unexpected ${describe(p)}, expected a value`);
}

function parseObject(p) {
  const out = {};
  p.i++;
  for (;;) {
    skip(p);
    if (p.text[p.i] === '}') break;
    if (p.text[p.i] !== '"') fail(p, `unexpected ${describe(p)}, expected a property name in double quotes or '}'`);
    const key = parseString(p);
    skip(p);
    if (p.text[p.i] !== ':') fail(p, `unexpected ${describe(p)}, expected ':' after property name ${JSON.stringify(key)}`);
    p.i++;
    skip(p);
    const value = parseValue(p);
    // As JSON.parse: an own property even for "__proto__" (assignment would set the prototype).
    if (key === '__proto__') Object.defineProperty(out, key, { value, writable: true, enumerable: true, configurable: true });
    else out[key] = value;
    skip(p);
    if (p.text[p.i] === ',') {
      p.i++;
      continue;
    }
    if (p.text[p.i] === '}') break;
    fail(p, `unexpected ${describe(p)}, expected ',' or '}'`);
  }
  p.i++;
  return out;
}

function parseArray(p) {
  const out = [];
  p.i++;
  for (;;) {
    skip(p);
    if (p.text[p.i] === ']') break;
    out.push(parseValue(p));
    skip(p);
    if (p.text[p.i] === ',') {
      p.i++;
      continue;
    }
    if (p.text[p.i] === ']') break;
    fail(p, `unexpected ${describe(p)}, expected ',' or ']'`);
  }
  p.i++;
  return out;
}

function parseString(p) {
  STRING.lastIndex = p.i;
  const m = STRING.exec(p.text);
  if (m === null) fail(p, badString(p));
  p.i += m[0].length;
  return JSON.parse(m[0]);
}

/** Why the string at p.i does not parse, with p.i moved to the offending character. */
function badString(p) {
  for (let j = p.i + 1; j < p.text.length; j++) {
    const c = p.text.charCodeAt(j);
    if (c === 0x22) break;
    if (c < 0x20) {
      p.i = j;
      return c === 0x0a ? 'unterminated string (a string cannot span lines; write \\n)' : 'control character in a string (escape it)';
    }
    if (c === 0x5c) {
      j++;
      if (!/["\\/bfnrtu]/.test(p.text[j] ?? '') || (p.text[j] === 'u' && !/^[0-9a-fA-F]{4}$/.test(p.text.slice(j + 1, j + 5)))) {
        p.i = j - 1;
        return 'invalid escape in a string';
      }
    }
  }
  return 'unterminated string';
}

/** Skips whitespace and comments. */
function skip(p) {
  const t = p.text;
  for (;;) {
    const c = t[p.i];
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r') {
      p.i++;
    } else if (c === '/' && t[p.i + 1] === '/') {
      const nl = t.indexOf('\n', p.i);
      p.i = nl === -1 ? t.length : nl;
    } else if (c === '/' && t[p.i + 1] === '*') {
      const close = t.indexOf('*/', p.i + 2);
      if (close === -1) fail(p, 'unterminated /* comment');
      p.i = close + 2;
    } else {
      return;
    }
  }
}

function describe(p) {
  if (p.i >= p.text.length) return 'end of file';
  return JSON.stringify(String.fromCodePoint(p.text.codePointAt(p.i)));
}

function fail(p, what) {
  const before = p.text.slice(0, p.i);
  const line = before.split('\n').length;
  const column = p.i - (before.lastIndexOf('\n') + 1) + 1;
  throw new DurableError(codes.CONFIG, `${p.file}:${line}:${column}: ${what} (JSON with comments and trailing commas)`);
}

module.exports = { parseJsonc };
