'use strict';
// The Peek worker linter: what in a worker's own code will not run the same
// on every Peek host, found before it runs. Static and syntactic: it reads
// the files the worker imports (./graph.js) and checks each against the
// rules (./imports.js, ./rules.js); it runs none of them. The table of rules
// (what each catches, why, what to use instead) is in docs/peek.md.
// `peek lint` prints the findings; `peek run` and `peek serve` print them
// before running.
const fs = require('node:fs');
const path = require('node:path');
const { loadManifest } = require('../manifest');
const { moduleGraph } = require('./graph');
const { nodeImportFindings } = require('./imports');
const { astFindings } = require('./rules');
const { entryParam } = require('./entry');
const { formatFinding, formatSummary } = require('./format');

/**
 * @typedef {{
 *   rule: 'node-import' | 'module-timer' | 'window' | 'eval' | 'ungranted-api' | 'parse',
 *   severity: 'error' | 'warning',
 *   file: string,
 *   line: number,
 *   column: number,
 *   message: string,
 *   hint: string,
 * }} Finding
 */

/**
 * Lints a worker and says what was read.
 * @param {string | import('../../../peek').Manifest} manifestOrPath a manifest.json path, or a loaded manifest
 * @returns {{ manifest: import('../../../peek').Manifest, findings: Finding[], files: string[], packages: string[] }}
 *   files: the files read (relative to the manifest's directory); packages: those imported but not read
 */
function lintReport(manifestOrPath) {
  const manifest = typeof manifestOrPath === 'string' ? loadManifest(manifestOrPath) : manifestOrPath;
  const { files, packages } = moduleGraph(manifest.worker.path);
  // The graph's paths are real ones (links resolved), so the base is too.
  const base = fs.realpathSync(manifest.dir);
  const rel = (file) => path.relative(base, file).split(path.sep).join('/');
  const findings = [];
  files.forEach((f, i) => {
    const file = rel(f.file);
    const raw = [];
    if (f.error) {
      raw.push({ rule: 'parse', severity: 'error', ...f.error, hint: 'the worker does not load until this is fixed' });
    } else {
      // The entry's first parameter is the api in the worker's own file
      // (the graph's first); elsewhere only `api`, `app` and window.app are.
      const param = i === 0 ? entryParam(f.ast, manifest.worker.entry) : null;
      raw.push(...nodeImportFindings(f.imports));
      raw.push(...astFindings(f.ast, { manifest, apiName: param?.name, apiPattern: param?.pattern }));
    }
    raw.sort((a, b) => a.line - b.line || a.column - b.column);
    for (const r of raw) findings.push({ rule: r.rule, severity: r.severity, file, line: r.line, column: r.column, message: r.message, hint: r.hint });
  });
  return { manifest, findings, files: files.map((f) => rel(f.file)), packages };
}

/**
 * The findings for a worker: what in its code will not run the same on every
 * Peek host. Throws ERR_PEEK_MANIFEST for a manifest that does not load.
 * @param {string} manifestPath a manifest.json
 * @returns {Finding[]}
 */
function lintWorker(manifestPath) {
  return lintReport(manifestPath).findings;
}

module.exports = { lintWorker, lintReport, formatFinding, formatSummary };
