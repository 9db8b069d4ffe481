#!/usr/bin/env bash
# Builds helm (the chart tests' renderer and installer) from the Go module proxy into a cache outside the
# repository, once per pinned version. Cold: a couple of hundred MB of modules and a few minutes on 2 cores;
# warm: returns at once.
#   NODECARE_CACHE   cache root (default: $XDG_CACHE_HOME/nodecare or ~/.cache/nodecare)
# Prints the path of the helm binary as its last line.
set -euo pipefail
HELM_VERSION=v4.3.1
cache=${NODECARE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nodecare}
out="$cache/helm/$HELM_VERSION"
# helm v4 needs a newer Go than some machines have; the go command fetches that toolchain if needed.
export GOTOOLCHAIN=${GOTOOLCHAIN:-go1.26.10} CGO_ENABLED=0 GOFLAGS="-trimpath"

step() { printf '[helm] %s\n' "$*" >&2; }
fail() { step "FAILED: $*"; exit 1; }

command -v go >/dev/null || fail "go is not on PATH (Go >= 1.26 is needed to build helm)"
if [ -x "$out/helm" ]; then
  step "using cached helm $HELM_VERSION in $out"
  echo "$out/helm"; exit 0
fi
mkdir -p "$out"
exec 9>"$out/.lock"
flock 9   # a second concurrent build waits for the first instead of racing it
if [ -x "$out/helm" ]; then echo "$out/helm"; exit 0; fi

started=$SECONDS
elapsed() { printf '%dm%02ds' $(((SECONDS - started) / 60)) $(((SECONDS - started) % 60)); }
( while sleep 60; do step "  ... still building helm $HELM_VERSION ($(elapsed) so far)"; done ) & hb=$!
trap 'kill $hb 2>/dev/null || true' EXIT
step "building helm $HELM_VERSION from the Go module proxy into $out (cold: a few minutes)"
GOBIN="$out/.bin" go install -ldflags "-s -w -X helm.sh/helm/v4/internal/version.version=$HELM_VERSION" \
  "helm.sh/helm/v4/cmd/helm@$HELM_VERSION" || fail "go install helm.sh/helm/v4/cmd/helm@$HELM_VERSION (is the Go module proxy reachable?)"
mv "$out/.bin/helm" "$out/helm"
rmdir "$out/.bin" 2>/dev/null || true
step "helm ready in $(elapsed)"
echo "$out/helm"
