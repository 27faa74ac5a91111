'use strict';
// What the fetch guard decides with: the manifest's grants compiled once,
// a host name matched against them, and an IP address classified. Plain
// JavaScript (the workerd realm bundles it too), and written against
// functions taken when this module loads, before any worker code runs: a
// worker that replaces String.prototype.endsWith or Array iteration changes
// nothing here. Grants are matched as ../domains.js matches them, with two
// differences: an address is only matched by that address (no "*.0.0.1"),
// and a loopback, private or otherwise non-public address is allowed only when
// the list grants that address itself ("127.0.0.1", "[::1]"), or, for loopback
// reached by the name "localhost", when "localhost" is granted. "*" and names
// grant the public internet.

const uncurry = Function.prototype.bind.bind(Function.prototype.call);
const charCodeAt = uncurry(String.prototype.charCodeAt);
const slice = uncurry(String.prototype.slice);
const endsWith = uncurry(String.prototype.endsWith);
const toLowerCase = uncurry(String.prototype.toLowerCase);
const freeze = Object.freeze;

/** Lower case, no trailing dot, no IPv6 brackets. */
function normalize(name) {
  let s = toLowerCase(name);
  if (s.length > 0 && charCodeAt(s, s.length - 1) === 46) s = slice(s, 0, -1);
  if (s.length > 1 && charCodeAt(s, 0) === 91 && charCodeAt(s, s.length - 1) === 93) s = slice(s, 1, -1);
  return s;
}

/**
 * The grants, compiled: call before worker code runs.
 * @param {string[]} domains
 */
function compileGrants(domains) {
  const names = [];
  const suffixes = [];
  const addresses = [];
  let any = false;
  let localhost = false;
  for (let i = 0; i < domains.length; i++) {
    const rule = normalize(`${domains[i]}`);
    const ip = parseIp(rule);
    if (rule === '*') any = true;
    else if (ip !== null) addresses[addresses.length] = ip;
    else if (charCodeAt(rule, 0) === 42 && charCodeAt(rule, 1) === 46) suffixes[suffixes.length] = slice(rule, 1);
    else {
      names[names.length] = rule;
      if (rule === 'localhost') localhost = true;
    }
  }
  return freeze({ any, localhost, names: freeze(names), suffixes: freeze(suffixes), addresses: freeze(addresses) });
}

/**
 * Whether a URL's hostname is granted by name: returns the address when the
 * hostname is an IP address ({ text, bytes }), true for a granted name, false.
 */
function hostGranted(grants, hostname) {
  const host = normalize(hostname);
  const ip = parseIp(host);
  if (ip !== null) {
    if (grants.any) return ip;
    for (let i = 0; i < grants.addresses.length; i++) if (sameAddress(grants.addresses[i], ip)) return ip;
    return false;
  }
  if (grants.any) return true;
  for (let i = 0; i < grants.names.length; i++) if (grants.names[i] === host) return true;
  for (let i = 0; i < grants.suffixes.length; i++) {
    const suffix = grants.suffixes[i];
    if (host.length > suffix.length && endsWith(host, suffix)) return true;
  }
  return false;
}

/**
 * Whether `hostname` may be reached at `ip` (parsed): any public address, or
 * a non-public one granted as such.
 */
function addressGranted(grants, hostname, ip) {
  if (isPublic(ip)) return true;
  for (let i = 0; i < grants.addresses.length; i++) if (sameAddress(grants.addresses[i], ip)) return true;
  return grants.localhost && normalize(hostname) === 'localhost' && isLoopback(ip);
}

/**
 * An IPv4 address in dotted decimal or an IPv6 address (with or without an
 * embedded IPv4 tail), as URL hostnames and DNS answers write them; null for
 * anything else. bytes: 4 or 16 numbers.
 */
function parseIp(text) {
  if (typeof text !== 'string') return null;
  const v4 = parseV4(text, 0, text.length);
  if (v4 !== null) return freeze({ text, bytes: v4 });
  const v6 = parseV6(text);
  return v6 === null ? null : freeze({ text, bytes: v6 });
}

function parseV4(s, from, to) {
  const bytes = [];
  let n = -1;
  for (let i = from; i <= to; i++) {
    const c = i < to ? charCodeAt(s, i) : 46;
    if (c === 46) {
      if (n < 0 || bytes.length === 4) return null;
      bytes[bytes.length] = n;
      n = -1;
    } else if (c >= 48 && c <= 57) {
      n = n < 0 ? c - 48 : n * 10 + (c - 48);
      if (n > 255) return null;
    } else return null;
  }
  return bytes.length === 4 ? bytes : null;
}

function parseV6(s) {
  const groups = [];
  let gap = -1;
  let i = 0;
  const len = s.length;
  if (len < 2) return null;
  if (charCodeAt(s, 0) === 58) {
    if (charCodeAt(s, 1) !== 58) return null;
    gap = 0;
    i = 2;
  }
  let tail = null;
  while (i < len) {
    // One group: hex digits up to ':' or the end; or a dotted IPv4 tail.
    let j = i;
    let v = 0;
    while (j < len && j - i < 5) {
      const c = charCodeAt(s, j);
      const d = c >= 48 && c <= 57 ? c - 48 : c >= 97 && c <= 102 ? c - 87 : c >= 65 && c <= 70 ? c - 55 : -1;
      if (d < 0) break;
      v = v * 16 + d;
      j++;
    }
    if (j < len && charCodeAt(s, j) === 46) {
      tail = parseV4(s, i, len);
      if (tail === null) return null;
      i = len;
      break;
    }
    if (j === i || j - i > 4) return null;
    groups[groups.length] = v;
    if (j === len) {
      i = len;
      break;
    }
    if (charCodeAt(s, j) !== 58) return null;
    if (j + 1 < len && charCodeAt(s, j + 1) === 58) {
      if (gap >= 0) return null;
      gap = groups.length;
      i = j + 2;
    } else {
      if (j + 1 === len) return null;
      i = j + 1;
    }
  }
  if (tail !== null) {
    groups[groups.length] = tail[0] * 256 + tail[1];
    groups[groups.length] = tail[2] * 256 + tail[3];
  }
  if (gap < 0 ? groups.length !== 8 : groups.length > 7) return null;
  const out = [];
  const fill = 8 - groups.length;
  for (let g = 0; g < groups.length; g++) {
    if (g === gap) for (let k = 0; k < fill; k++) ((out[out.length] = 0), (out[out.length] = 0));
    out[out.length] = groups[g] >> 8;
    out[out.length] = groups[g] & 255;
  }
  if (gap === groups.length) for (let k = 0; k < fill; k++) ((out[out.length] = 0), (out[out.length] = 0));
  return out.length === 16 ? out : null;
}

/** The IPv4 address an IPv6 one stands for (mapped ::ffff:a.b.c.d, NAT64 64:ff9b::a.b.c.d), or the bytes as they are. */
function unwrap(bytes) {
  if (bytes.length !== 16) return bytes;
  let zeros = true;
  for (let i = 0; i < 10; i++) if (bytes[i] !== 0) zeros = false;
  const mapped = zeros && bytes[10] === 255 && bytes[11] === 255;
  let nat64 = bytes[0] === 0 && bytes[1] === 0x64 && bytes[2] === 0xff && bytes[3] === 0x9b;
  for (let i = 4; i < 12; i++) if (bytes[i] !== 0) nat64 = false;
  return mapped || nat64 ? [bytes[12], bytes[13], bytes[14], bytes[15]] : bytes;
}

function sameAddress(a, b) {
  const x = unwrap(a.bytes);
  const y = unwrap(b.bytes);
  if (x.length !== y.length) return false;
  for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return false;
  return true;
}

function isLoopback(ip) {
  const b = unwrap(ip.bytes);
  if (b.length === 4) return b[0] === 127;
  for (let i = 0; i < 15; i++) if (b[i] !== 0) return false;
  return b[15] === 1;
}

/** Public: reachable on the internet, so granted by a name or "*". Everything else needs a grant of the address itself. */
function isPublic(ip) {
  const b = unwrap(ip.bytes);
  if (b.length === 4) {
    const a = b[0];
    const c = b[1];
    if (a === 0 || a === 10 || a === 127 || a >= 224) return false; // this network, private, loopback, multicast, reserved, broadcast
    if (a === 100 && c >= 64 && c < 128) return false; // shared address space (CGNAT)
    if (a === 169 && c === 254) return false; // link-local, cloud metadata
    if (a === 172 && c >= 16 && c < 32) return false;
    if (a === 192 && c === 168) return false;
    if (a === 192 && c === 0 && (b[2] === 0 || b[2] === 2)) return false; // IETF protocol assignments, TEST-NET-1
    if (a === 198 && (c === 18 || c === 19)) return false; // benchmarking
    if (a === 198 && c === 51 && b[2] === 100) return false; // TEST-NET-2
    if (a === 203 && c === 0 && b[2] === 113) return false; // TEST-NET-3
    return true;
  }
  // IPv6: only global unicast (2000::/3), less documentation, 6to4 and Teredo (they wrap other addresses).
  if ((b[0] & 0xe0) !== 0x20) return false;
  if (b[0] === 0x20 && b[1] === 0x01 && b[2] === 0x0d && b[3] === 0xb8) return false; // 2001:db8::/32
  if (b[0] === 0x20 && b[1] === 0x02) return false; // 2002::/16
  if (b[0] === 0x20 && b[1] === 0x01 && b[2] === 0 && b[3] === 0) return false; // 2001::/32
  return true;
}

module.exports = { compileGrants, hostGranted, addressGranted, parseIp, isPublic, normalize };
