#!/usr/bin/env bash
# Builds the autoscaling tools of the autoscaler tests from the Go module proxy into a cache outside the
# repository, once per pinned version (never committed):
#   kwok       sigs.k8s.io/kwok/cmd/kwok (drives the fake nodes: Ready, heartbeats, pods Running), plus its
#              default "fast" stages copied from the module into the cache directory (stages/)
#   karpenter  sigs.k8s.io/karpenter/kwok (Karpenter with its KWOK cloud provider), plus its CRDs (crds/)
# Usage: build.sh kwok|karpenter   Prints the cache directory of that tool as its last line.
#   NODECARE_CACHE   cache root (default: $XDG_CACHE_HOME/nodecare or ~/.cache/nodecare)
# Cold costs measured on 2 shared cores are in docs/autoscalers.md; a warm cache returns at once.
set -euo pipefail
KWOK_VERSION=v0.8.0
KARPENTER_VERSION=v1.15.0
tool=${1:-}
cache=${NODECARE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nodecare}
# Karpenter v1.15 needs Go >= 1.26.9; the go command fetches that toolchain through the module proxy.
export GOTOOLCHAIN=${GOTOOLCHAIN:-go1.26.10} CGO_ENABLED=0 GOFLAGS="-trimpath"

step() { printf '[%s] %s\n' "${tool:-autoscalers}" "$*" >&2; }
fail() { step "FAILED: $*"; exit 1; }

case "$tool" in
  kwok) version=$KWOK_VERSION module=sigs.k8s.io/kwok package=sigs.k8s.io/kwok/cmd/kwok binary=kwok ;;
  karpenter) version=$KARPENTER_VERSION module=sigs.k8s.io/karpenter package=sigs.k8s.io/karpenter/kwok binary=karpenter ;;
  *) fail "usage: build.sh kwok|karpenter (got '${tool}')" ;;
esac
out="$cache/$tool/$version"

command -v go >/dev/null || fail "go is not on PATH (Go >= 1.26 is needed to build $tool)"
if [ -x "$out/$binary" ]; then
  step "using cached $tool $version in $out"
  echo "$out"; exit 0
fi
mkdir -p "$out"
exec 9>"$out/.lock"
flock 9   # a second concurrent build waits for the first instead of racing it
if [ -x "$out/$binary" ]; then echo "$out"; exit 0; fi

avail_kb=$(df -Pk "$cache" | awk 'NR==2 {print $4}')
[ "${avail_kb:-0}" -gt 2000000 ] || fail "less than 2 GB free under $cache (the module and build caches need it)"

started=$SECONDS
elapsed() { printf '%dm%02ds' $(((SECONDS - started) / 60)) $(((SECONDS - started) % 60)); }
( while sleep 60; do step "  ... still building $tool $version ($(elapsed) so far)"; done ) & hb=$!
trap 'kill $hb 2>/dev/null || true' EXIT

step "downloading $module@$version from the Go module proxy"
dir=$(go mod download -json "$module@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -n "$dir" ] && [ -d "$dir" ] || fail "go mod download $module@$version (is the Go module proxy reachable?)"

step "compiling $package@$version into $out (cold: several minutes on 2 cores)"
GOBIN="$out/.bin" go install -ldflags "-s -w" "$package@$version" ||
  fail "go install $package@$version"

# The binary is moved into place last: it marks a complete cache entry.
rm -rf "$out/stages" "$out/crds"
case "$tool" in
  kwok)
    # The stages kwokctl passes by default (standalone kwok refuses to start without stages).
    mkdir -p "$out/stages"
    for f in node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
      pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml; do
      cp "$dir/kustomize/stage/$f" "$out/stages/" || fail "stage $f missing from $module@$version"
    done
    chmod -R u+w "$out/stages"
    mv "$out/.bin/kwok" "$out/kwok"
    ;;
  karpenter)
    mkdir -p "$out/crds"
    # NodePool, NodeClaim, NodeOverlay, CapacityBuffer and the KWOK provider's KWOKNodeClass.
    cp "$dir"/kwok/charts/crds/*.yaml "$dir"/kwok/apis/crds/*.yaml "$out/crds/" ||
      fail "CRDs missing from $module@$version"
    chmod -R u+w "$out/crds"
    mv "$out/.bin/kwok" "$out/karpenter"
    ;;
esac
rmdir "$out/.bin" 2>/dev/null || true
step "$tool $version ready in $(elapsed)"
echo "$out"
