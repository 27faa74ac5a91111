'use strict';
// Parsing one worker file with acorn. A .js file may be either kind of
// module (its package.json decides, and a worker package may have none), so
// it is read as an ES module first and as a CommonJS script when that fails;
// .mjs and .cjs are read as what their extension says.
const acorn = require('acorn');

const OPTIONS = { ecmaVersion: 'latest', locations: true, allowHashBang: true, allowAwaitOutsideFunction: true };

/**
 * @param {string} source the file's text
 * @param {string} file its path (the extension picks the module kind)
 * @returns {{ ast: import('acorn').Program, sourceType: 'module' | 'script' } | { error: { line: number, column: number, message: string } }}
 */
function parseSource(source, file) {
  // V8 skips a leading byte-order mark; acorn does not.
  const text = source.charCodeAt(0) === 0xfeff ? source.slice(1) : source;
  const kinds = file.endsWith('.mjs') ? ['module'] : file.endsWith('.cjs') ? ['script'] : ['module', 'script'];
  let first = null;
  for (const sourceType of kinds) {
    try {
      // A CommonJS module body is a function's: it may return.
      const ast = acorn.parse(text, { ...OPTIONS, sourceType, allowReturnOutsideFunction: sourceType === 'script' });
      return { ast, sourceType };
    } catch (err) {
      if (!(err instanceof SyntaxError)) throw err;
      // The module reading's error is the one to show: a file that is
      // neither kind is most often an ES module with a typo.
      first ??= err;
    }
  }
  const loc = first.loc ?? { line: 1, column: 0 };
  return { error: { line: loc.line, column: loc.column + 1, message: first.message.replace(/ \(\d+:\d+\)$/, '') } };
}

module.exports = { parseSource };
