'use strict';
// The same cases as ../do/workerd-probe.test.js, on this package's Durable
// Objects host: every answer must be workerd's, except the known differences
// below, each with its reason (docs/durable-objects-on-node.md lists them).
const test = require('ava');
const { startProbeOnNode } = require('../helpers/do-probe');
const { probeCases } = require('../helpers/do-probe-cases');

const known = {
  'a partly read INSERT … RETURNING cursor left open at the end of the turn breaks the commit: the object resets and the turn is lost':
    'this host reads every row at exec, so the turn commits; workerd loses it (a workerd bug)',
  'deleteAll inside transactionSync is not refused: it resets the database, then the savepoint release fails with an internal error':
    'this host refuses deleteAll() in transactionSync() as in transaction(); workerd resets, then fails with an internal error (a workerd bug)',
};

probeCases(test, () => startProbeOnNode(), { known });
