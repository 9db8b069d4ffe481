#!/usr/bin/env bash
# Builds one Go command from the Go module proxy into a cache outside the repository, once per pinned version
# (what build-helm.sh and build-promtool.sh share). Progress goes to stderr, with a line a minute while it
# builds; a second concurrent build waits for the first instead of racing it.
#   go-install.sh <name> <package> <version> [ldflags] [build tags]
#   NODECARE_CACHE   cache root (default: $XDG_CACHE_HOME/nodecare or ~/.cache/nodecare)
# Prints the path of the binary as its last line.
set -euo pipefail
name=$1 package=$2 version=$3 ldflags=${4:-} tags=${5:-}
cache=${NODECARE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nodecare}
out="$cache/$name/$version${tags:+-${tags// /-}}"
# Some tools need a newer Go than some machines have; the go command fetches that toolchain if needed.
export GOTOOLCHAIN=${GOTOOLCHAIN:-go1.26.10} CGO_ENABLED=0 GOFLAGS="-trimpath"

step() { printf '[%s] %s\n' "$name" "$*" >&2; }
fail() { step "FAILED: $*"; exit 1; }

command -v go >/dev/null || fail "go is not on PATH (Go >= 1.26 is needed to build $name)"
if [ -x "$out/$name" ]; then
  step "using cached $name $version in $out"
  echo "$out/$name"; exit 0
fi
mkdir -p "$out"
exec 9>"$out/.lock"
flock 9
if [ -x "$out/$name" ]; then echo "$out/$name"; exit 0; fi

started=$SECONDS
elapsed() { printf '%dm%02ds' $(((SECONDS - started) / 60)) $(((SECONDS - started) % 60)); }
( while sleep 60; do step "  ... still building $name $version ($(elapsed) so far)"; done ) & hb=$!
trap 'kill $hb 2>/dev/null || true' EXIT
step "building $name $version from the Go module proxy into $out (cold: a few minutes)"
GOBIN="$out/.bin" go install -tags "$tags" -ldflags "-s -w $ldflags" "$package@$version" ||
  fail "go install $package@$version (is the Go module proxy reachable?)"
mv "$out/.bin/$name" "$out/$name"
rmdir "$out/.bin" 2>/dev/null || true
step "$name ready in $(elapsed)"
echo "$out/$name"
