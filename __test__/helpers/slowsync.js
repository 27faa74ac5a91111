'use strict';
// The slow-sync shim for crash tests (bench/slowsync): under it a commit takes
// milliseconds, so a result released before its commit has landed is caught
// by a SIGKILL instead of hiding behind a fast device.
const fs = require('node:fs');
const path = require('node:path');
const { ensureShim, slowSyncEnv } = require('../../bench/slowsync');

/** True when the shim is mapped into this process (a child reports this). */
function slowSyncLoaded() {
  try {
    return fs.readFileSync('/proc/self/maps', 'utf8').includes(path.basename(ensureShim()));
  } catch {
    return false;
  }
}

module.exports = { slowSyncEnv, slowSyncLoaded };
