'use strict';
// Who holds a loopback port. Without the sandbox, a run as another user
// (`uid`, `--run-as`) shares the host's loopback: if the store or the hub is
// not listening, the run could listen on its port and be sent the credential.
// Before a credential goes to a loopback port, the supervisor reads who
// listens there (Linux: /proc/net/tcp and tcp6, whose entries carry the
// socket's owner) and refuses to send it to a listener owned by the runs'
// uid. A sandboxed run has a loopback of its own and needs none of this.
const fs = require('node:fs');
const net = require('node:net');

const LISTEN = '0A';
const LOOPBACK_NAMES = new Set(['localhost', 'localhost.']);

/** Whether `hostname` (as in a URL) is a loopback name or address. */
function isLoopback(hostname) {
  const h = hostname.replace(/^\[|\]$/g, '');
  if (LOOPBACK_NAMES.has(h.toLowerCase())) return true;
  if (net.isIPv4(h)) return h.startsWith('127.');
  return h === '::1';
}

/** The uids of the sockets listening on TCP `port` (any address), from /proc/net; null where that cannot be read. */
function listenerUids(port) {
  const uids = new Set();
  let read = false;
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text;
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    read = true;
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 8 || f[3] !== LISTEN) continue;
      if (Number.parseInt(f[1].split(':')[1], 16) === port) uids.add(Number(f[7]));
    }
  }
  return read ? uids : null;
}

/**
 * Throws `makeError(message)` when `url` is on loopback and its port is held
 * by `runUid`; does nothing for other hosts, or when `runUid` is undefined.
 * @param {string} url
 * @param {number | undefined} runUid the uid runs are started as
 * @param {(message: string) => Error} makeError
 */
function refuseRunHeldPort(url, runUid, makeError) {
  if (runUid === undefined) return;
  const u = new URL(url);
  if (!isLoopback(u.hostname)) return;
  const port = Number(u.port || (u.protocol === 'https:' || u.protocol === 'wss:' ? 443 : 80));
  const uids = listenerUids(port);
  if (uids !== null && uids.has(runUid)) {
    throw makeError(`port ${port} on loopback is held by uid ${runUid}, the user runs are started as: the credential is not sent there (a run may be listening in the store's or hub's place)`);
  }
}

module.exports = { refuseRunHeldPort, listenerUids, isLoopback };
