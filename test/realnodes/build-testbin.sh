#!/usr/bin/env bash
# Builds testbin (test/realnodes/testbin: the device plugin, readiness stand-in and pause/workload program the
# real-node suite runs as pods) into a cache outside the repository, keyed by its sources. Cold: ~1 minute
# (gRPC and the kubelet's device plugin API from the Go module proxy); warm: returns at once.
#   NODECARE_CACHE   cache root (default: $XDG_CACHE_HOME/nodecare or ~/.cache/nodecare)
# Prints the path of the binary as its last line.
set -euo pipefail
here=$(cd "$(dirname "$0")/testbin" && pwd)
cache=${NODECARE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nodecare}
recipe=$(cd "$here" && cat go.mod go.sum main.go | sha256sum | cut -c1-12)
out="$cache/testbin/$recipe"
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="-trimpath -mod=readonly"

step() { printf '[testbin] %s\n' "$*" >&2; }
fail() { step "FAILED: $*"; exit 1; }

command -v go >/dev/null || fail "go is not on PATH (Go >= 1.26 is needed to build the test workloads)"
if [ -x "$out/testbin" ]; then
  step "using cached testbin in $out"
  echo "$out/testbin"; exit 0
fi
mkdir -p "$out"
exec 9>"$out/.lock"
flock 9
if [ -x "$out/testbin" ]; then echo "$out/testbin"; exit 0; fi
started=$SECONDS
step "building the test workloads (device plugin, readiness stand-in, pause) into $out"
(cd "$here" && go build -ldflags '-s -w' -o "$out/testbin.tmp" .) || fail "go build of test/realnodes/testbin"
mv "$out/testbin.tmp" "$out/testbin"
step "testbin ready in $((SECONDS - started))s"
echo "$out/testbin"
