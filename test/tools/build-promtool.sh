#!/usr/bin/env bash
# Builds promtool (checks and unit-tests the alert rules in manifests/monitoring/) from the Go module proxy into
# a cache outside the repository, once per pinned version. Cold: several hundred MB of modules and several
# minutes on 2 cores; warm: returns at once.
#   NODECARE_CACHE   cache root (default: $XDG_CACHE_HOME/nodecare or ~/.cache/nodecare)
# Prints the path of the promtool binary as its last line.
set -euo pipefail
# Prometheus v3.16.0 (its Go module is versioned v0.<major><minor>.<patch>).
PROMETHEUS_MODULE_VERSION=v0.316.0
cache=${NODECARE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nodecare}
out="$cache/promtool/$PROMETHEUS_MODULE_VERSION"
export GOTOOLCHAIN=${GOTOOLCHAIN:-go1.26.10} CGO_ENABLED=0 GOFLAGS="-trimpath"

step() { printf '[promtool] %s\n' "$*" >&2; }
fail() { step "FAILED: $*"; exit 1; }

command -v go >/dev/null || fail "go is not on PATH (Go >= 1.26 is needed to build promtool)"
if [ -x "$out/promtool" ]; then
  step "using cached promtool $PROMETHEUS_MODULE_VERSION in $out"
  echo "$out/promtool"; exit 0
fi
mkdir -p "$out"
exec 9>"$out/.lock"
flock 9   # a second concurrent build waits for the first instead of racing it
if [ -x "$out/promtool" ]; then echo "$out/promtool"; exit 0; fi

started=$SECONDS
elapsed() { printf '%dm%02ds' $(((SECONDS - started) / 60)) $(((SECONDS - started) % 60)); }
( while sleep 60; do step "  ... still building promtool $PROMETHEUS_MODULE_VERSION ($(elapsed) so far)"; done ) & hb=$!
trap 'kill $hb 2>/dev/null || true' EXIT
step "building promtool $PROMETHEUS_MODULE_VERSION from the Go module proxy into $out (cold: several minutes)"
GOBIN="$out/.bin" go install -ldflags "-s -w" \
  "github.com/prometheus/prometheus/cmd/promtool@$PROMETHEUS_MODULE_VERSION" ||
  fail "go install github.com/prometheus/prometheus/cmd/promtool@$PROMETHEUS_MODULE_VERSION (is the Go module proxy reachable?)"
mv "$out/.bin/promtool" "$out/promtool"
rmdir "$out/.bin" 2>/dev/null || true
step "promtool ready in $(elapsed)"
echo "$out/promtool"
