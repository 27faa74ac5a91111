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

/**
 * The addresses a URL's hostname connects to on this machine, as
 * /proc/net/tcp writes them (hex), or null when it is not a local address
 * this check understands (another host, or a name other than localhost).
 */
function localTargets(hostname) {
  const h = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (LOOPBACK_NAMES.has(h)) return [v4Hex('127.0.0.1'), v6Hex('::1')];
  if (net.isIPv4(h)) return h.startsWith('127.') || h === '0.0.0.0' ? [v4Hex(h)] : null;
  if (net.isIPv6(h)) {
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(h);
    if (mapped) return localTargets(mapped[1]);
    return h === '::1' || h === '::' ? [v6Hex(h)] : null;
  }
  return null;
}

/** An IPv4 address as /proc/net/tcp writes it: its 32 bits in host (little-endian) order, hex. */
function v4Hex(ip) {
  return ip
    .split('.')
    .map((n) => Number(n).toString(16).padStart(2, '0').toUpperCase())
    .reverse()
    .join('');
}

/** An IPv6 address as /proc/net/tcp6 writes it: four 32-bit words, each little-endian, hex. */
function v6Hex(ip) {
  const parts = ip.split('::');
  const head = parts[0] ? parts[0].split(':') : [];
  const tail = parts.length > 1 && parts[1] ? parts[1].split(':') : [];
  const groups = [...head, ...Array(8 - head.length - tail.length).fill('0'), ...tail].map((g) => g.padStart(4, '0'));
  const bytes = groups.join('').match(/../g);
  let out = '';
  for (let w = 0; w < 4; w++)
    out += bytes
      .slice(w * 4, w * 4 + 4)
      .reverse()
      .join('');
  return out.toUpperCase();
}

const WILDCARD = new Set(['00000000', '0'.repeat(32), '0000000000000000FFFF000000000000']);

/** Whether `hostname` (as in a URL) is a loopback or this-machine address the check covers. */
function isLoopback(hostname) {
  return localTargets(hostname) !== null;
}

/** Listeners on TCP `port` as { address (hex), uid }, from /proc/net; null where that cannot be read. */
function listeners(port) {
  const out = [];
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
      const [address, hexPort] = f[1].split(':');
      if (Number.parseInt(hexPort, 16) === port) out.push({ address, uid: Number(f[7]) });
    }
  }
  return read ? out : null;
}

/** The uids of the sockets listening on TCP `port` (any address); null where /proc/net cannot be read. */
function listenerUids(port) {
  const l = listeners(port);
  return l === null ? null : new Set(l.map((x) => x.uid));
}

/**
 * Throws `makeError(message)` when `url` is on this machine's loopback (or
 * its wildcard address) and the socket that would answer it, one listening
 * on that address or on every address, is owned by `runUid`; does nothing
 * for other hosts, when `runUid` is undefined, and off Linux. Where Linux's
 * /proc/net cannot be read, it refuses: it cannot tell.
 * @param {string} url
 * @param {number | undefined} runUid the uid runs are started as
 * @param {(message: string) => Error} makeError
 */
function refuseRunHeldPort(url, runUid, makeError) {
  // Only Linux says who listens (/proc/net); elsewhere a run as another user is a guard-rail here too.
  if (runUid === undefined || process.platform !== 'linux') return;
  const u = new URL(url);
  const targets = localTargets(u.hostname);
  if (targets === null) return;
  const port = Number(u.port || (u.protocol === 'https:' || u.protocol === 'wss:' ? 443 : 80));
  const found = listeners(port);
  if (found === null) throw makeError(`who listens on loopback port ${port} cannot be read (/proc/net): the credential is not sent there while runs share this machine's loopback`);
  const serving = found.filter((l) => WILDCARD.has(l.address) || targets.includes(l.address));
  if (serving.some((l) => l.uid === runUid)) {
    throw makeError(`port ${port} on loopback is held by uid ${runUid}, the user runs are started as: the credential is not sent there (a run may be listening in the store's or hub's place)`);
  }
}

module.exports = { refuseRunHeldPort, listenerUids, isLoopback };
