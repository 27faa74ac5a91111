'use strict';
// Fails when any TAP output of this CI run (.ci/tap*.out) skipped a test that
// .ci/expected-skips does not list.
const fs = require('node:fs');
const path = require('node:path');

const dir = __dirname;
const expected = new Set(
  fs
    .readFileSync(path.join(dir, 'expected-skips'), 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#')),
);
const unexpected = [];
let skips = 0;
for (const file of fs.readdirSync(dir).filter((f) => /^tap.*\.out$/.test(f))) {
  for (const line of fs.readFileSync(path.join(dir, file), 'utf8').split('\n')) {
    const m = /^ok \d+ - (.*) # SKIP\s*$/.exec(line);
    if (m === null) continue;
    skips++;
    if (!expected.has(m[1])) unexpected.push(`${file}: ${m[1]}`);
  }
}
if (unexpected.length > 0) {
  console.error(`skipped, and not in .ci/expected-skips:\n  ${unexpected.join('\n  ')}`);
  process.exit(1);
}
console.log(`${skips} skip(s), all listed in .ci/expected-skips`);
