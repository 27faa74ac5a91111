#!/usr/bin/env node
'use strict';
// The command line: `durable-workers <command> …`. Commands live in js/cli/.
const { main } = require('../js/cli');

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    process.stderr.write(`durable-workers: ${err?.stack ?? err}\n`);
    process.exitCode = 1;
  },
);
