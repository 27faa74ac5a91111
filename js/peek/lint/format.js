'use strict';
// A lint report for people: one line per finding, as compilers print them
// (file:line:column, so editors and terminals link them), and a summary.

/**
 * One finding as a line: `worker.js:3:1 node-import  import of node:fs: … (use …)`.
 * @param {import('./index').Finding} f
 */
function formatFinding(f) {
  return `${f.file}:${f.line}:${f.column} ${f.rule}  ${f.message} (${f.hint})`;
}

/**
 * The summary line of a report.
 * @param {{ findings: import('./index').Finding[], files: string[], packages: string[] }} report
 */
function formatSummary({ findings, files, packages }) {
  const errors = findings.filter((f) => f.severity === 'error').length;
  const count = (n, what) => `${n} ${what}${n === 1 ? '' : 's'}`;
  const found = findings.length === 0 ? 'no findings' : `${count(findings.length, 'finding')} (${count(errors, 'error')}, ${count(findings.length - errors, 'warning')})`;
  const deps = packages.length === 0 ? '' : `; not read: ${packages.join(', ')}`;
  return `${found} in ${count(files.length, 'file')}${deps}`;
}

module.exports = { formatFinding, formatSummary };
