'use strict';
// index.d.ts is exact enough to compile what users write, under --strict; and
// the examples, plain JavaScript, type-check against it (tsc --strict
// --checkJs): a wrong signature in the types, or an example that drifted from
// the API, fails here rather than in a user's editor.
const test = require('ava');
const { execFileSync } = require('node:child_process');
const path = require('node:path');

/** Runs tsc on one project; fails the test with tsc's own output. */
function tsc(t, project) {
  const bin = require.resolve('typescript/bin/tsc');
  try {
    execFileSync(process.execPath, [bin, '-p', path.join(__dirname, '..', 'types', project)], { stdio: 'pipe' });
    t.pass();
  } catch (err) {
    t.fail(String(err.stdout) + String(err.stderr));
  }
}

test('the public types compile a typical program under tsc --strict', (t) => {
  t.timeout(120_000);
  tsc(t, 'tsconfig.json');
});

// examples/shop, examples/chat and the Peek workers' modules. Not
// examples/peek/second/run.cjs: it requires the library's sources
// (js/peek), which are JavaScript without full JSDoc, not the published types.
test('the examples type-check against the public types under tsc --strict --checkJs', (t) => {
  t.timeout(120_000);
  // A glob that silently stopped matching would make this pass for nothing.
  const bin = require.resolve('typescript/bin/tsc');
  const listed = execFileSync(process.execPath, [bin, '-p', path.join(__dirname, '..', 'types', 'tsconfig.examples.json'), '--listFilesOnly'], { encoding: 'utf8' });
  for (const f of ['shop/cart.js', 'shop/load.js', 'shop/run.js', 'shop/server.js', 'chat/room.js', 'chat/server.js', 'peek/hello/worker.js', 'peek/second/worker.js']) {
    t.true(listed.includes(`examples/${f}`), `examples/${f} is checked`);
  }
  tsc(t, 'tsconfig.examples.json');
});
