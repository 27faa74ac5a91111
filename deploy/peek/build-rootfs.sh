#!/usr/bin/env bash
# The root file system of Peek's container image: Debian (mmdebstrap, variant
# minbase) with bubblewrap (the per-run sandbox), util-linux's setpriv and
# prlimit, ca-certificates and tini; the pinned Node.js line from the npm
# registry's node-linux-<arch> package (scripts/node-lines.js pins the
# version); and durable-workers as a user installs it: the release packed by
# scripts/pack.js (the main package and this platform's addon package),
# `npm install --omit=dev` into /opt/peek. A user `peek` (uid and gid 10001).
#
#   deploy/peek/build-rootfs.sh <out.tar | out-dir>
#
# <out>.tar: a tarball for `podman import` / `ADD rootfs.tar /`; anything else:
# a directory (replaced), for bwrap or chroot. Needs root (mmdebstrap's root
# mode, file ownership), mmdebstrap, npm and a built addon
# (native/durable-workers.linux-<arch>-gnu.node: `npm ci` builds it).
#
# Environment:
#   PEEK_ROOTFS_CACHE  where downloads and built layers are kept (default
#                      /tmp/peek-rootfs-cache); the Debian layer is keyed by
#                      suite and package list, the whole rootfs by that, the
#                      Node version and the packed tarballs' hashes, so a
#                      rerun with nothing changed only copies the result
#   PEEK_NODE_LINE     the Node.js line (default 24)
#   PEEK_DEBIAN_SUITE  default bookworm
#   PEEK_DEBIAN_MIRROR default http://deb.debian.org/debian
set -euo pipefail

out=${1:?usage: build-rootfs.sh <out.tar | out-dir>}
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cache=${PEEK_ROOTFS_CACHE:-/tmp/peek-rootfs-cache}
line=${PEEK_NODE_LINE:-24}
suite=${PEEK_DEBIAN_SUITE:-bookworm}
mirror=${PEEK_DEBIAN_MIRROR:-http://deb.debian.org/debian}
# bubblewrap: the run sandbox; util-linux: setpriv and prlimit (a root
# supervisor's runs); tini: PID 1 that reaps and forwards signals.
packages=ca-certificates,bubblewrap,util-linux,tini
PEEK_UID=10001

say() { echo "build-rootfs: $*" >&2; }
die() {
  say "$*"
  exit 1
}
sha() { sha256sum "$@" | awk '{print $1}' | sha256sum | cut -c1-16; }

[[ $(id -u) == 0 ]] || die "needs root (mmdebstrap's root mode and the files' owners)"
command -v mmdebstrap >/dev/null || die 'mmdebstrap is not installed (apt-get install mmdebstrap)'
command -v npm >/dev/null || die 'npm is not on PATH'
case $(uname -m) in
  x86_64) arch=x64 deb_arch=amd64 ;;
  aarch64) arch=arm64 deb_arch=arm64 ;;
  *) die "no Node.js package for $(uname -m)" ;;
esac
triple=linux-$arch-gnu
[[ -f $repo/native/durable-workers.$triple.node ]] || die "native/durable-workers.$triple.node is not built (npm ci, or npm run build)"
mkdir -p "$cache"
export npm_config_update_notifier=false npm_config_audit=false npm_config_fund=false

# 1. Debian: cached as a tarball per suite, mirror and package list.
base_key=$(printf '%s\n' "$suite" "$mirror" "$packages" "$deb_arch" "$(sed -n '/^mmdebstrap_args=(/,/^)/p' "$0")" | sha256sum | cut -c1-16)
base=$cache/debian-$suite-$base_key.tar
# shellcheck disable=SC2016  # "$1" in the hook is mmdebstrap's to expand, not ours
mmdebstrap_args=(
  --variant=minbase --architectures="$deb_arch" --include="$packages"
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*'
  --dpkgopt='path-include=/usr/share/doc/*/copyright' --dpkgopt='path-exclude=/usr/share/locale/*'
  --dpkgopt='path-exclude=/usr/share/info/*'
  --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin'
)
if [[ ! -f $base ]]; then
  say "Debian $suite ($packages) with mmdebstrap into $base"
  started=$SECONDS
  mmdebstrap --quiet --format=tar "${mmdebstrap_args[@]}" "$suite" "$base.part" "$mirror"
  mv "$base.part" "$base"
  say "Debian layer built in $((SECONDS - started)) s"
fi

# 2. Node.js: the line's pinned version (scripts/node-lines.js), bin/node only.
node_version=$(node -p "require('$repo/scripts/node-lines.js').versionOf('$line')")
node_dir=$cache/node-$arch-$node_version
if [[ ! -x $node_dir/bin/node ]]; then
  say "node-linux-$arch@$node_version from the npm registry"
  tmp=$(mktemp -d "$cache/.node-XXXXXX")
  file=$(npm pack --silent --pack-destination "$tmp" "node-linux-$arch@$node_version" | tail -n 1)
  tar xzf "$tmp/$file" -C "$tmp"
  rm -rf "$node_dir"
  mv "$tmp/package" "$node_dir"
  rm -rf "$tmp"
fi

# 3. durable-workers as released: scripts/pack.js packs the main package and
#    this platform's package (with the addon built in native/).
dist=$cache/dist
rm -rf "$dist"
node -e "
  const r = require('$repo/scripts/pack.js').pack({ out: process.argv[1] });
  const p = r.platforms.find((x) => x.triple === '$triple');
  if (!p) throw new Error('no $triple package was packed');
  require('fs').writeFileSync(process.argv[1] + '/tarballs', r.main.tarball + '\n' + p.tarball + '\n');
" "$dist" >/dev/null
mapfile -t tarballs <"$dist/tarballs"
script_hash=$(sha "$0" "$here/peek-healthcheck.js")
key=$(printf '%s\n' "$base_key" "$node_version" "$(sha "${tarballs[@]}")" "$script_hash" "$(sha "$repo/package-lock.json")" | sha256sum | cut -c1-16)
image=$cache/rootfs-$key.tar

if [[ ! -f $image ]]; then
  started=$SECONDS
  stage=$(mktemp -d "$cache/.stage-XXXXXX")
  trap 'rm -rf "$stage"' EXIT
  root=$stage/root
  mkdir "$root"
  tar -xpf "$base" -C "$root" --numeric-owner
  install -m 0755 "$node_dir/bin/node" "$root/usr/local/bin/node"
  # The package and its dependencies (from the registry), no dev dependencies.
  # Both tarballs are named, so the platform package comes from here; the
  # other platforms' optional packages are skipped (not this OS/CPU/libc).
  app=$root/opt/peek
  mkdir -p "$app"
  cp "${tarballs[@]}" "$app/"
  (
    cd "$app"
    names=()
    for f in "${tarballs[@]}"; do names+=("./$(basename "$f")"); done
    printf '{ "name": "peek-image", "version": "1.0.0", "private": true }\n' >package.json
    npm install --omit=dev --ignore-scripts --no-package-lock --loglevel=error --os=linux --cpu="$arch" --libc=glibc "${names[@]}" >/dev/null
    rm -f ./*.tgz
  )
  ln -sf /opt/peek/node_modules/durable-workers/bin/durable-workers.js "$root/usr/local/bin/durable-workers"
  install -m 0755 "$here/peek-healthcheck.js" "$root/usr/local/bin/peek-healthcheck"
  # The user the supervisor runs as, and the directories it uses:
  # /workers (manifests, mounted read-only), /var/lib/peek (state, a volume),
  # the credentials file is mounted at /run/secrets/peek-credentials (no
  # /run/secrets here: podman 4.3 with --read-only then fails to mount a secret into it).
  grep -q '^peek:' "$root/etc/group" || echo "peek:x:$PEEK_UID:" >>"$root/etc/group"
  grep -q '^peek:' "$root/etc/passwd" || echo "peek:x:$PEEK_UID:$PEEK_UID:Peek supervisor:/var/lib/peek:/usr/sbin/nologin" >>"$root/etc/passwd"
  grep -q '^peek:' "$root/etc/shadow" || echo 'peek:!:19000::::::' >>"$root/etc/shadow"
  install -d -m 0755 "$root/workers"
  install -d -m 0700 -o "$PEEK_UID" -g "$PEEK_UID" "$root/var/lib/peek"
  chmod -R a+rX "$app"
  # The check the image runs (and the test looks for).
  "$root/usr/local/bin/node" -e "require('$app/node_modules/durable-workers/js/native/load.js')" ||
    die 'the installed package does not load its addon'
  tar --numeric-owner --sort=name -cf "$image.part" -C "$root" .
  mv "$image.part" "$image"
  say "rootfs $image built in $((SECONDS - started)) s"
  # One root file system is kept (258 MB): the one just built.
  find "$cache" -maxdepth 1 -name 'rootfs-*.tar' ! -path "$image" -delete
fi

if [[ $out == *.tar ]]; then
  cp "$image" "$out"
else
  rm -rf "$out"
  mkdir -p "$out"
  tar -xpf "$image" -C "$out" --numeric-owner
fi
say "$out: Debian $suite, Node $node_version, durable-workers $(node -p "require('$repo/package.json').version") ($(du -sh "$image" | cut -f1) as a tarball)"
