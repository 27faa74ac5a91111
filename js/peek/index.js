'use strict';
// durable-workers/peek: the portable worker host. One shared host
// (createWorkerHost), the Node adapter under it (nodeAdapter), and the
// conformance suite that checks any adapter against the contract.
const { createWorkerHost } = require('./host');
const { nodeAdapter } = require('./node/adapter');
const { loadManifest } = require('./manifest');
const { parseSchedule } = require('./schedule-spec');
const { credentialEnvName } = require('./credentials');
const { runConformance } = require('./conformance');
const { createSupervisor } = require('./supervisor');
const { codes } = require('./errors');
const { lintWorker } = require('./lint');

module.exports = { createWorkerHost, nodeAdapter, runConformance, loadManifest, parseSchedule, credentialEnvName, createSupervisor, lintWorker, codes };
