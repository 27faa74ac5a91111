'use strict';
// Reading the Prometheus text exposition format with the Prometheus project's
// own parser (prometheus_client.parser, from its official Python client; the
// Debian package python3-prometheus-client, installed by .ci/run), so that
// what host.metrics() writes is checked against the format and not against
// our own reading of it.
const { spawnSync } = require('node:child_process');

const SCRIPT = `
import json, math, sys
from prometheus_client.parser import text_string_to_metric_families
out = []
for f in text_string_to_metric_families(sys.stdin.read()):
    out.append({"name": f.name, "type": f.type, "documentation": f.documentation,
                "samples": [{"name": s.name, "labels": s.labels,
                             "value": "+Inf" if s.value == math.inf else s.value} for s in f.samples]})
print(json.dumps(out))
`;

/** The interpreters tried, Debian's first (a pyenv one on PATH may lack the package). */
const PYTHONS = ['/usr/bin/python3', 'python3'];

let found;
/** A python3 that has prometheus_client, or null. */
function python() {
  if (found !== undefined) return found;
  found = PYTHONS.find((p) => spawnSync(p, ['-c', 'import prometheus_client.parser'], { stdio: 'ignore' }).status === 0) ?? null;
  return found;
}

/** Why the parser cannot run here, or null. */
function unavailable() {
  return python() === null ? 'no python3 with prometheus_client (apt-get install python3-prometheus-client)' : null;
}

/**
 * Parses exposition text; throws with the parser's message if it is not valid.
 * @returns {{ name: string, type: string, documentation: string, samples: { name: string, labels: Record<string, string>, value: number | '+Inf' }[] }[]}
 */
function parseExposition(text) {
  const r = spawnSync(python(), ['-c', SCRIPT], { input: text, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`prometheus_client could not parse the exposition: ${r.stderr.trim().split('\n').pop()}`);
  return JSON.parse(r.stdout);
}

module.exports = { parseExposition, unavailable };
