'use strict';
// index.d.ts is exact enough to compile what users write, under --strict.
const test = require('ava');
const { execFileSync } = require('node:child_process');
const path = require('node:path');

test('the public types compile a typical program under tsc --strict', (t) => {
  t.timeout(120_000);
  const tsc = require.resolve('typescript/bin/tsc');
  try {
    execFileSync(process.execPath, [tsc, '-p', path.join(__dirname, 'types', 'tsconfig.json')], { stdio: 'pipe' });
    t.pass();
  } catch (err) {
    t.fail(String(err.stdout) + String(err.stderr));
  }
});
