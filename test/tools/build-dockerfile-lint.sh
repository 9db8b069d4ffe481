#!/usr/bin/env bash
# Builds dockerfile-lint (BuildKit's Dockerfile parser and linter, test/tools/dockerfile-lint) from the Go
# module proxy into a cache outside the repository, once per recipe. Cold: ~100 MB of modules and about a
# minute on 2 cores; warm: returns at once.
#   NODECARE_CACHE   cache root (default: $XDG_CACHE_HOME/nodecare or ~/.cache/nodecare)
# Prints the path of the binary as its last line.
set -euo pipefail
here=$(cd "$(dirname "$0")/dockerfile-lint" && pwd)
cache=${NODECARE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nodecare}
recipe=$(cd "$here" && cat go.mod go.sum main.go | sha256sum | cut -c1-12)
out="$cache/dockerfile-lint/$recipe"
export GOTOOLCHAIN=${GOTOOLCHAIN:-local} CGO_ENABLED=0 GOFLAGS="-trimpath -mod=readonly"

step() { printf '[dockerfile-lint] %s\n' "$*" >&2; }
fail() { step "FAILED: $*"; exit 1; }

command -v go >/dev/null || fail "go is not on PATH (Go >= 1.26 is needed to build dockerfile-lint)"
if [ -x "$out/dockerfile-lint" ]; then
  step "using cached dockerfile-lint in $out"
  echo "$out/dockerfile-lint"; exit 0
fi
mkdir -p "$out"
exec 9>"$out/.lock"
flock 9   # a second concurrent build waits for the first instead of racing it
if [ -x "$out/dockerfile-lint" ]; then echo "$out/dockerfile-lint"; exit 0; fi
started=$SECONDS
step "building dockerfile-lint (BuildKit's Dockerfile linter) from the Go module proxy into $out"
(cd "$here" && go build -p 2 -ldflags "-s -w" -o "$out/dockerfile-lint.tmp" .) \
  || fail "go build of test/tools/dockerfile-lint (is the Go module proxy reachable?)"
mv "$out/dockerfile-lint.tmp" "$out/dockerfile-lint"
step "dockerfile-lint ready in $((SECONDS - started))s"
echo "$out/dockerfile-lint"
