'use strict';
// `.dev.vars`: the file of local secrets `wrangler dev` reads next to the
// Wrangler config, in dotenv syntax.
//
// Guarantee: parseDotenv(text) gives what `dotenv.parse` gives, the parser
// wrangler uses for this file (workers-sdk packages/wrangler/src/dev/dev-vars.ts
// `tryLoadDotDevDotVars`; dotenv 16.3.1 in its pnpm catalog). No variable
// expansion: wrangler expands `${X}` only in `.env` files, not in `.dev.vars`.
//
// The rules, one per part of LINE below:
// * `KEY=value` or `KEY: value`, optionally after `export `; a key is made of
//   letters, digits, `_`, `.` and `-`. Text that does not match is skipped.
// * A value quoted with ', " or ` runs to the matching quote and may span
//   lines; the quotes are removed. Only in a double-quoted value do `\n` and
//   `\r` become a newline and a carriage return; other backslashes stay.
// * An unquoted value runs to the end of the line or to `#`, trimmed.
// * `# …` after a value, and lines starting with `#`, are comments.
// * A later assignment of a key wins.

const LINE = new RegExp(
  [
    '^\\s*(?:export\\s+)?', // optional `export`
    '([\\w.-]+)', // the key
    '(?:\\s*=\\s*?|:\\s+?)', // `=` or `: `
    '(\\s*\'(?:\\\\\'|[^\'])*\'|\\s*"(?:\\\\"|[^"])*"|\\s*`(?:\\\\`|[^`])*`|[^#\\r\\n]+)?', // the value
    '\\s*(?:#.*)?$', // a trailing comment
  ].join(''),
  'mg',
);
const QUOTED = /^(['"`])([\s\S]*)\1$/gm;

/**
 * Parses dotenv text into a map of strings.
 * @param {string} text
 * @returns {Record<string, string>}
 */
function parseDotenv(text) {
  const out = {};
  const lines = text.replace(/\r\n?/g, '\n');
  for (const m of lines.matchAll(LINE)) {
    const raw = (m[2] ?? '').trim();
    let value = raw.replace(QUOTED, '$2');
    if (raw[0] === '"') value = value.replace(/\\n/g, '\n').replace(/\\r/g, '\r');
    out[m[1]] = value;
  }
  return out;
}

module.exports = { parseDotenv };
