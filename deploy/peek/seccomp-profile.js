#!/usr/bin/env node
'use strict';
// A seccomp profile for Peek's container: the container engine's default
// profile with one change, sethostname and setdomainname allowed without
// CAP_SYS_ADMIN. Each run's sandbox (bubblewrap, in a user namespace of its
// own inside the container) names its UTS namespace `peek-run`; the default
// profile refuses the call (EPERM) to a process without CAP_SYS_ADMIN in the
// container, and seccomp cannot see that the caller holds it in its own
// namespace. Everything else bubblewrap needs (unshare, clone, mount,
// pivot_root, umount2) the default profile already allows. Smaller than
// `--security-opt seccomp=unconfined`.
//
//   node deploy/peek/seccomp-profile.js [default.json] > peek-seccomp.json
//   podman run --security-opt seccomp=peek-seccomp.json …
//
// default.json: podman's /usr/share/containers/seccomp.json (the default),
// or Docker's profile (moby/profiles/seccomp/default.json).
const fs = require('node:fs');

const from = process.argv[2] ?? '/usr/share/containers/seccomp.json';
const profile = JSON.parse(fs.readFileSync(from, 'utf8'));
const NAMES = ['sethostname', 'setdomainname'];
for (const rule of profile.syscalls) {
  // Drop both names from the rules that allow them with CAP_SYS_ADMIN or refuse them without it.
  if (rule.names.some((n) => NAMES.includes(n)) && (rule.includes?.caps?.length || rule.excludes?.caps?.length)) {
    rule.names = rule.names.filter((n) => !NAMES.includes(n));
  }
}
profile.syscalls = profile.syscalls.filter((r) => r.names.length > 0);
profile.syscalls.push({ names: NAMES, action: 'SCMP_ACT_ALLOW', args: [], comment: 'Peek: bubblewrap names the UTS namespace of each run', includes: {}, excludes: {} });
process.stdout.write(`${JSON.stringify(profile, null, 2)}\n`);
