#!/usr/bin/env bash
# arm64: cross-builds the addon for aarch64-unknown-linux-gnu and runs the core
# of the suite with the registry's arm64 Node under qemu-user. binfmt_misc
# hands every aarch64 ELF to qemu, so children (ava's workers, crash tests,
# Peek forks, shards) run as arm64 too.
#
#   bash .ci/arm64.sh                 the core (below)
#   bash .ci/arm64.sh FILES…          these test files instead
#   CI_FULL=1 bash .ci/arm64.sh       the whole suite
#
# Needs a checkout where `npm ci` has run, root, and Debian's apt. Installs
# what is missing: qemu-user-static and binfmt-support, and arm64's libc6 and
# libstdc++6 (Debian multiarch: `dpkg --add-architecture arm64`) for the
# dynamically linked arm64 Node; zig, cargo-zigbuild and the Rust target come
# from scripts/build-targets.js, the Node from scripts/node-lines.js, both
# into the checkout.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
NODE_LINE=24
TRIPLE=aarch64-unknown-linux-gnu
ADDON=native/durable-workers.linux-arm64-gnu.node
GLIBC_FLOOR=$(node -p "require('./scripts/build-targets').GLIBC_FLOOR")

# The core: state, the gate, collections, shards, crashes, alarms, sockets,
# Peek. About 3 minutes under qemu on 2 cores (x64 native: under 2).
CORE=(
  __test__/state/resident-state.test.js __test__/state/gate.test.js __test__/collections/collections.test.js
  __test__/shards/shards.test.js __test__/files/crash.test.js __test__/alarms/alarms.test.js
  __test__/sockets/sockets.test.js __test__/peek/walk.test.js __test__/peek/security.test.js
)
# Timed (setting 1,000 alarms takes 2 s under qemu alone, up to 9 s beside
# other test files; its lead is twice a first measured setting), so it runs
# by itself, after the rest.
ALONE='1,000 workers with alarms*'

TIMES=()
step_name=''
step_started=0
step() {
  finish
  step_name=$1
  step_started=$SECONDS
  echo "== arm64: $1"
}
finish() {
  if [[ -n $step_name ]]; then
    TIMES+=("$(printf '%5ds  %s' $((SECONDS - step_started)) "$step_name")")
    echo "== arm64: $step_name: $((SECONDS - step_started))s"
  fi
  step_name=''
}
summary() {
  finish
  echo '== arm64: time per part'
  printf '%s\n' "${TIMES[@]}"
  echo "== arm64: total ${SECONDS}s"
}

step 'qemu-user-static, binfmt, arm64 libc (Debian)'
need=()
[[ -x /usr/bin/qemu-aarch64-static ]] || need+=(qemu-user-static)
command -v update-binfmts >/dev/null 2>&1 || need+=(binfmt-support)
dpkg -s libc6:arm64 libstdc++6:arm64 >/dev/null 2>&1 || need+=(libc6:arm64 libstdc++6:arm64)
if ((${#need[@]} > 0)); then
  dpkg --print-foreign-architectures | grep -qx arm64 || dpkg --add-architecture arm64
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
# Installing does not register the handler where no init system runs.
mountpoint -q /proc/sys/fs/binfmt_misc || mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
if [[ "$(head -n 1 /proc/sys/fs/binfmt_misc/qemu-aarch64 2>/dev/null)" != enabled ]]; then
  update-binfmts --enable qemu-aarch64
fi

step "build $ADDON (scripts/build-targets.js: cargo-zigbuild, glibc $GLIBC_FLOOR)"
node scripts/build-targets.js "$TRIPLE" # fails above the glibc floor

step "arm64 Node $NODE_LINE (scripts/node-lines.js) loads the addon"
NODE=$(node scripts/node-lines.js path "$NODE_LINE" --arch arm64)
# shellcheck disable=SC2016 # JavaScript in single quotes
"$NODE" -e '
  const assert = require("node:assert");
  assert.strictEqual(process.arch, "arm64");
  require(process.argv[1]);
  const { open } = require(".");
  const loaded = process.report.getReport().sharedObjects.filter((f) => f.endsWith(".node"));
  assert.deepStrictEqual(loaded.map((f) => require("node:path").basename(f)), ["durable-workers.linux-arm64-gnu.node"]);
  assert.strictEqual(typeof open, "function");
  console.log(`${process.version} ${process.arch} glibc ${process.report.getReport().header.glibcVersionRuntime}: ${loaded[0]}`);
' "$ROOT/$ADDON"

# The crash tests' slow-sync shim (bench/slowsync) is built with the host cc,
# so an arm64 child cannot preload it. Until it is built per architecture,
# an arm64 build goes in by LD_PRELOAD's $PLATFORM token (a no-op library for
# x86_64 processes, so host tools stay quiet); DW_SLOWSYNC_MS=0 leaves every
# process but the crash tests' children (which set 5 ms) at full speed.
step 'slow-sync shim for arm64 children (zig cc)'
SHIMS=$ROOT/.cross/slowsync
ZIG=$(node -p "require('./scripts/build-targets').ensureZig().zig")
mkdir -p "$SHIMS/aarch64" "$SHIMS/x86_64"
"$ZIG" cc -target aarch64-linux-gnu.2.17 -shared -fPIC -O2 -o "$SHIMS/aarch64/slowsync.so" bench/slowsync/slowsync.c -ldl
echo 'void dw_slowsync_placeholder(void) {}' | cc -x c -shared -fPIC -o "$SHIMS/x86_64/slowsync.so" -
export LD_PRELOAD="$SHIMS/\$PLATFORM/slowsync.so${LD_PRELOAD:+:$LD_PRELOAD}" DW_SLOWSYNC_MS=0

failed=0
pass=0
fail=0
# Runs ava under the arm64 Node (first on PATH, for children), TAP kept in
# .ci/tap-arm64*.out; adds to the counts.
ava_arm64() {
  local out=$1 status=0 p f
  shift
  PATH="$(dirname "$NODE"):$PATH" "$NODE" node_modules/ava/entrypoints/cli.mjs --tap --concurrency=2 "$@" >"$out" 2>&1 || status=$?
  cat "$out"
  p=$(grep -E '^# pass' "$out" | awk '{print $3}' | tail -n 1)
  f=$(grep -E '^# fail' "$out" | awk '{print $3}' | tail -n 1)
  pass=$((pass + ${p:-0}))
  fail=$((fail + ${f:-0}))
  ((status == 0)) || failed=1
}

if (($# > 0)); then
  files=("$@")
elif [[ ${CI_FULL:-0} == 1 ]]; then
  files=() # ava's own list: the whole suite
else
  files=("${CORE[@]}")
fi
step "tests under qemu, Node $NODE_LINE arm64: ${files[*]:-the whole suite}"
ava_arm64 .ci/tap-arm64.out --match "!$ALONE" "${files[@]}"
if ((${#files[@]} == 0)) || [[ " ${files[*]} " == *' __test__/alarms/alarms.test.js '* ]]; then
  step "tests under qemu, alone: alarms › alarms › $ALONE"
  ava_arm64 .ci/tap-arm64-alone.out --match "$ALONE" __test__/alarms/alarms.test.js
fi

summary
echo "arm64 Node $("$NODE" --version): $pass passed, $fail failed"
exit $failed
