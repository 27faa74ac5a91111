'use strict';
// The conformance report as a text table: one row per check.

/** @param {import('../../../peek').ConformanceReport} report */
function formatReport(report) {
  const rows = [
    ...report.assertions.map((a) => [a.ok ? 'pass' : 'FAIL', `assertion ${a.id}`, a.name, a.observed]),
    ...report.declarations.map((d) => [d.ok ? 'pass' : 'FAIL', 'declaration', `${d.field} = ${d.declared}`, d.observed]),
  ];
  const widths = [4, 12, Math.min(72, Math.max(...rows.map((r) => r[2].length)))];
  const line = (r) => `${r[0].padEnd(widths[0])}  ${r[1].padEnd(widths[1])}  ${r[2].padEnd(widths[2])}  ${r[3]}`;
  const failed = rows.filter((r) => r[0] === 'FAIL').length;
  return [
    `conformance of adapter ${JSON.stringify(report.adapter)} (${report.ms} ms)`,
    ...rows.map(line),
    failed === 0 ? `all ${rows.length} checks pass` : `${failed} of ${rows.length} checks FAIL`,
  ].join('\n');
}

module.exports = { formatReport };
