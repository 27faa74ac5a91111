'use strict';
// A line chart as plain SVG (no dependency): throughput against concurrency,
// one line per system, concurrency on a log₂ axis. For docs/bench.svg.

const COLORS = ['#2563eb', '#dc2626', '#16a34a', '#9333ea', '#ea580c', '#0891b2'];

function esc(s) {
  return String(s).replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]);
}

/**
 * @param {{ title: string, xLabel: string, yLabel: string, series: { name: string, points: [number, number][] }[] }} spec
 * @returns {string} an SVG document
 */
function lineChart({ title, xLabel, yLabel, series }) {
  const W = 760;
  const H = 420;
  const m = { l: 70, r: 250, t: 40, b: 55 };
  const xs = [...new Set(series.flatMap((s) => s.points.map((p) => p[0])))].sort((a, b) => a - b);
  const yMax = niceCeil(Math.max(1, ...series.flatMap((s) => s.points.map((p) => p[1]))));
  const lx0 = Math.log2(xs[0]);
  const lx1 = Math.log2(xs[xs.length - 1]);
  const x = (v) => m.l + ((Math.log2(v) - lx0) / Math.max(1e-9, lx1 - lx0)) * (W - m.l - m.r);
  const y = (v) => H - m.b - (v / yMax) * (H - m.t - m.b);
  const out = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="system-ui, sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${m.l}" y="22" font-size="15" font-weight="600">${esc(title)}</text>`,
  ];
  for (let i = 0; i <= 5; i++) {
    const v = (yMax / 5) * i;
    out.push(`<line x1="${m.l}" x2="${W - m.r}" y1="${y(v)}" y2="${y(v)}" stroke="#e5e7eb"/>`);
    out.push(`<text x="${m.l - 8}" y="${y(v) + 4}" text-anchor="end" fill="#374151">${Math.round(v).toLocaleString('en-US')}</text>`);
  }
  for (const v of xs) {
    out.push(`<line x1="${x(v)}" x2="${x(v)}" y1="${H - m.b}" y2="${H - m.b + 5}" stroke="#374151"/>`);
    out.push(`<text x="${x(v)}" y="${H - m.b + 19}" text-anchor="middle" fill="#374151">${v}</text>`);
  }
  out.push(`<line x1="${m.l}" x2="${W - m.r}" y1="${H - m.b}" y2="${H - m.b}" stroke="#374151"/>`);
  out.push(`<text x="${(m.l + W - m.r) / 2}" y="${H - 12}" text-anchor="middle" fill="#111827">${esc(xLabel)}</text>`);
  out.push(`<text transform="translate(16 ${(m.t + H - m.b) / 2}) rotate(-90)" text-anchor="middle" fill="#111827">${esc(yLabel)}</text>`);
  series.forEach((s, i) => {
    const c = COLORS[i % COLORS.length];
    const pts = s.points.map(([a, b]) => `${x(a).toFixed(1)},${y(b).toFixed(1)}`).join(' ');
    out.push(`<polyline points="${pts}" fill="none" stroke="${c}" stroke-width="2.5"/>`);
    for (const [a, b] of s.points) out.push(`<circle cx="${x(a).toFixed(1)}" cy="${y(b).toFixed(1)}" r="3.5" fill="${c}"/>`);
    const ly = m.t + 10 + i * 22;
    out.push(`<line x1="${W - m.r + 20}" x2="${W - m.r + 44}" y1="${ly}" y2="${ly}" stroke="${c}" stroke-width="2.5"/>`);
    out.push(`<text x="${W - m.r + 50}" y="${ly + 4}" fill="#111827">${esc(s.name)}</text>`);
  });
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}

/** 1, 2, 2.5, 5 × 10ⁿ at or above `v`. */
function niceCeil(v) {
  const p = 10 ** Math.floor(Math.log10(v));
  for (const f of [1, 2, 2.5, 5, 10]) if (f * p >= v) return f * p;
  return 10 * p;
}

module.exports = { lineChart };
