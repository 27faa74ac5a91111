#!/usr/bin/env bash
# Tries peek.service under a real systemd where the machine has none as PID 1:
# a Debian image with systemd (mmdebstrap), the Node and the package of a
# root file system from build-rootfs.sh, the unit installed and enabled,
# booted by podman (--privileged --systemd=always: systemd needs to make the
# unit's namespaces). Then, under the unit's own hardening: `peek serve`
# says its runs are sandboxed; `durable-workers conformance` passes (in a
# copy of the unit, Type=oneshot, UMask=0022: the suite writes its own probe
# workers, and a worker file others cannot read is not shipped into the
# sandbox); a probe run cannot open /etc/peek/credentials.json.
#
#   deploy/peek/try-unit.sh <rootfs.tar from build-rootfs.sh>
#
# Needs root, mmdebstrap and podman. Takes about a minute and a half (the
# Debian layer is cached in PEEK_ROOTFS_CACHE). Removes its container and
# image at the end. While it runs, systemd in the container mounts the
# cgroup v1 hierarchies it wants (hugetlb, perf_event, net_cls on a hybrid
# host): they go when the container does.
set -euo pipefail

peek_tar=${1:?usage: try-unit.sh <rootfs.tar>}
here=$(cd "$(dirname "$0")" && pwd)
cache=${PEEK_ROOTFS_CACHE:-/tmp/peek-rootfs-cache}
suite=${PEEK_DEBIAN_SUITE:-bookworm}
mirror=${PEEK_DEBIAN_MIRROR:-http://deb.debian.org/debian}
export CONTAINERS_CONF=${CONTAINERS_CONF:-$here/containers.conf}
name=peek-unit-try-$$
image=localhost/$name
say() { echo "try-unit: $*" >&2; }

mkdir -p "$cache"
base=$cache/debian-$suite-systemd.tar
if [[ ! -f $base ]]; then
  say "Debian $suite with systemd (mmdebstrap)"
  mmdebstrap --quiet --format=tar --variant=minbase --include=systemd,systemd-sysv,dbus,bubblewrap,util-linux,ca-certificates "$suite" "$base.part" "$mirror"
  mv "$base.part" "$base"
fi

work=$(mktemp -d /tmp/peek-unit-try-XXXXXX)
# shellcheck disable=SC2317,SC2329  # run by the EXIT trap
cleanup() {
  podman rm -f -v -t 5 "$name" >/dev/null 2>&1 || true
  podman rmi -f "$image" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
root=$work/root
mkdir "$root"
tar -xpf "$base" -C "$root" --numeric-owner
tar -xpf "$peek_tar" -C "$root" --numeric-owner ./usr/local/bin/node ./opt/peek ./usr/local/bin/durable-workers
chroot "$root" useradd --system --home-dir /var/lib/peek --shell /usr/sbin/nologin peek
install -d -m 0755 "$root/etc/peek/workers/probe"
printf '{ "type": "module" }\n' >"$root/etc/peek/workers/probe/package.json"
cat >"$root/etc/peek/workers/probe/manifest.json" <<'EOF'
{ "name": "probe", "worker": { "url": "worker.js", "entry": "probe" }, "schedule": "every 1h", "capabilities": { "log": {} } }
EOF
cat >"$root/etc/peek/workers/probe/worker.js" <<'EOF'
import fs from 'node:fs';
export async function probe() {
  const out = { uid: process.getuid() };
  for (const p of ['/etc/peek/credentials.json', '/etc/peek', '/var/lib/peek']) {
    try { out[p] = 'READ ' + (fs.statSync(p).isDirectory() ? fs.readdirSync(p).join(',') : fs.readFileSync(p, 'utf8').length + ' bytes'); } catch (err) { out[p] = err.code; }
  }
  return out;
}
EOF
chmod 0644 "$root"/etc/peek/workers/probe/*
printf '{ "probe": "try-unit-credential" }\n' >"$root/etc/peek/credentials.json"
chroot "$root" chown peek:peek /etc/peek/credentials.json
chmod 0600 "$root/etc/peek/credentials.json"
cp "$here/peek.service" "$root/etc/systemd/system/peek.service"
# The same unit, running something else once: the conformance suite, a probe run.
derive() {
  sed -e "s|^ExecStart=.*|ExecStart=$2|" -e 's|^Type=exec|Type=oneshot|' -e 's|^Restart=on-failure|Restart=no|' -e 's|^UMask=0077|UMask=0022|' \
    "$here/peek.service" >"$root/etc/systemd/system/$1.service"
}
derive peek-conformance '/usr/local/bin/durable-workers conformance'
derive peek-probe '/usr/local/bin/durable-workers peek run /etc/peek/workers/probe/manifest.json --state /var/lib/peek/probe --credentials /etc/peek/credentials.json --sandbox required --json'
chroot "$root" systemctl enable peek.service >/dev/null 2>&1
tar --numeric-owner -cf "$work/image.tar" -C "$root" .
podman import --quiet --change 'CMD=["/sbin/init"]' --change 'STOPSIGNAL=SIGRTMIN+3' "$work/image.tar" "$image" >/dev/null

nofile=$(awk '/^Max open files/ {print $5}' /proc/self/limits)
started=
for runtime in '' runc; do
  if podman ${runtime:+--runtime "$runtime"} run -d --name "$name" --privileged --systemd=always --ulimit "nofile=$nofile:$nofile" --ulimit nproc=4096:4096 "$image" >/dev/null 2>"$work/err"; then
    started=${runtime:-default}
    break
  fi
  say "podman run${runtime:+ --runtime $runtime}: $(tail -n 1 "$work/err")"
  podman rm -f "$name" >/dev/null 2>&1 || true
done
[[ -n $started ]] || exit 1
say "systemd booted in podman (runtime: $started)"
for _ in $(seq 60); do
  podman exec "$name" journalctl -u peek -o cat --no-pager 2>/dev/null | grep -q 'runs are' && break
  sleep 1
done
status=0
serve=$(podman exec "$name" journalctl -u peek -o cat --no-pager | grep -E 'runs are|ERR_' || true)
echo "peek.service: $(podman exec "$name" systemctl is-active peek): $serve"
grep -q 'runs are sandboxed' <<<"$serve" || status=1
if podman exec "$name" systemctl start peek-conformance; then echo 'conformance under the unit: pass'; else
  echo 'conformance under the unit: FAIL'
  status=1
fi
podman exec "$name" journalctl -u peek-conformance -o cat --no-pager | grep -E '^(FAIL|all|[0-9]+ of)' || true
podman exec "$name" systemctl start peek-probe || status=1
probe=$(podman exec "$name" journalctl -u peek-probe -o cat --no-pager | grep '"event":"run"' || true)
echo "probe run: $probe"
grep -q '"/etc/peek/credentials.json":"ENOENT"' <<<"$probe" || status=1
podman exec "$name" systemctl stop peek
echo "peek.service stopped: $(podman exec "$name" systemctl show -p Result --value peek)"
exit $status
