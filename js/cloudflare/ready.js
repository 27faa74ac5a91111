'use strict';
// How startWorkerd (./process.js) knows the workerd answering on its port is
// the deployment it started: the generated entry answers PING_PATH with a
// random token that the build wrote beside the config, in TOKEN_FILE. Shared
// by the Node side and the bundled gateway, so it holds constants only.

/** The path a deployment answers with its readiness token (reserved: a user's fetch never sees it). */
const PING_PATH = '/__durable-workers-ping';
/** The file beside config.capnp that holds the token. */
const TOKEN_FILE = 'ready-token';

module.exports = { PING_PATH, TOKEN_FILE };
