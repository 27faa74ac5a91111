'use strict';
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

/** A fresh directory for one test, removed when the test ends. */
function tmpDir(t) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dw-test-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

module.exports = { tmpDir };
