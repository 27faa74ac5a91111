#!/usr/bin/env node
'use strict';
// The image's HEALTHCHECK. `peek serve` has no HTTP port; what it has is the
// control socket of its state directory (a durable directory: js/control/,
// the socket `durable-workers inspect` and `top` ask). Healthy means:
//   1. the process serving the state directory answers `stats` on that
//      socket within the timeout: it is alive, holds the directory, and its
//      event loop is not stuck;
//   2. the state directory is writable: a file is created, synced and
//      removed there (a read-only or full volume fails here, not at the
//      next run's commit).
// Run as the supervisor's user: the socket is 0600, for that user only.
//
//   peek-healthcheck [<state dir>]   default: $PEEK_STATE or /var/lib/peek
// Exit 0 healthy, 1 not, with one line saying why.
const fs = require('node:fs');
const path = require('node:path');

const state = path.resolve(process.argv[2] ?? process.env.PEEK_STATE ?? '/var/lib/peek');
const TIMEOUT_MS = 5000;
// The installed package's control client (internal: not among its exports).
const PACKAGE = process.env.PEEK_PACKAGE_DIR ?? '/opt/peek/node_modules/durable-workers';

function unhealthy(why) {
  console.log(`unhealthy: ${why}`);
  process.exit(1);
}

async function main() {
  const { connect } = require(path.join(PACKAGE, 'js', 'control', 'client.js'));
  let stats;
  try {
    const client = await connect(state, { timeout: TIMEOUT_MS });
    try {
      stats = await client.request('stats', {}, { timeout: TIMEOUT_MS });
    } finally {
      client.close();
    }
  } catch (err) {
    unhealthy(`peek serve does not answer on ${state}'s control socket: ${err.message}`);
  }
  const probe = path.join(state, `.peek-healthcheck-${process.pid}`);
  try {
    const fd = fs.openSync(probe, 'wx', 0o600);
    try {
      fs.writeSync(fd, `${Date.now()}\n`);
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
      fs.rmSync(probe, { force: true });
    }
  } catch (err) {
    unhealthy(`the state directory ${state} is not writable (${err.code ?? err.message})`);
  }
  const live = stats && typeof stats === 'object' ? Object.keys(stats).length : 0;
  console.log(`healthy: peek serve answers on ${state} (stats: ${live} fields); the directory is writable`);
}

main().catch((err) => unhealthy(err?.message ?? String(err)));
