'use strict';
// Which hosts a manifest's capabilities.network.domains allows. Shared by the
// guard inside a run's process and by the host's checks, so both answer alike.
//
//   "api.example.com"   exactly that host
//   "*.example.com"     any subdomain of example.com, not example.com itself
//   "*"                 any host

/**
 * @param {string[]} domains the manifest's list
 * @param {string} hostname from a URL (lower case, no port)
 */
function hostAllowed(domains, hostname) {
  const host = normalize(hostname);
  for (const d of domains) {
    const rule = normalize(d);
    if (rule === '*' || rule === host) return true;
    if (rule.startsWith('*.') && host.endsWith(rule.slice(1)) && host.length > rule.length - 1) return true;
  }
  return false;
}

/** Lower case, no trailing dot, IPv6 without brackets. */
function normalize(name) {
  return name
    .toLowerCase()
    .replace(/\.$/, '')
    .replace(/^\[|\]$/g, '');
}

/** Refuses anything that is not a host pattern; returns an error message, or null when valid. */
function domainProblem(d) {
  if (typeof d !== 'string' || d.length === 0) return 'must be a non-empty string';
  if (d === '*') return null;
  const body = d.startsWith('*.') ? d.slice(2) : d;
  if (!/^[A-Za-z0-9.-]+$/.test(body) && !/^\[[0-9a-fA-F:]+\]$/.test(body)) {
    return 'must be a host name ("api.example.com"), a wildcard ("*.example.com") or "*"; no scheme, port or path';
  }
  return null;
}

module.exports = { hostAllowed, domainProblem };
