'use strict';
// Plain-text table rendering and number formatting for the report.

/**
 * Renders rows as an aligned, pipe-separated table (readable in a terminal
 * and valid Markdown when pasted into an issue).
 * @param {string[]} headers
 * @param {string[][]} rows
 * @param {('left'|'right')[]} [align] per column; left by default
 * @returns {string}
 */
function renderTable(headers, rows, align = []) {
  const widths = headers.map((h, c) => Math.max(h.length, ...rows.map((r) => (r[c] ?? '').length)));
  const line = (cells) => `| ${cells.map((cell, c) => (align[c] === 'right' ? (cell ?? '').padStart(widths[c]) : (cell ?? '').padEnd(widths[c]))).join(' | ')} |`;
  const rule = `|${widths.map((w, c) => (align[c] === 'right' ? `${'-'.repeat(w + 1)}:` : '-'.repeat(w + 2))).join('|')}|`;
  return [line(headers), rule, ...rows.map(line)].join('\n');
}

/**
 * A number with thousands separators and sensible precision: whole numbers
 * from 100 up, otherwise three significant digits.
 * @param {number} n
 * @returns {string}
 */
function formatNumber(n) {
  if (!Number.isFinite(n)) return String(n);
  if (Math.abs(n) >= 100) return Math.round(n).toLocaleString('en-US');
  return Number(n.toPrecision(3)).toLocaleString('en-US', { maximumFractionDigits: 3 });
}

/**
 * A ratio such as "1.24×".
 * @param {number} n
 * @returns {string}
 */
function formatRatio(n) {
  if (!Number.isFinite(n)) return '–';
  return `${n >= 10 ? n.toFixed(1) : n.toFixed(2)}×`;
}

/**
 * Microseconds, switching to milliseconds from 1 ms.
 * @param {number} us
 * @returns {string}
 */
function formatMicros(us) {
  return us >= 1000 ? `${formatNumber(us / 1000)} ms` : `${formatNumber(us)} µs`;
}

module.exports = { renderTable, formatNumber, formatRatio, formatMicros };
