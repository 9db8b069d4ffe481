#!/usr/bin/env bash
# Builds medik8s node-healthcheck-operator (NodeHealthCheck, NHC) from the Go module proxy into a cache outside the
# repository, once per pinned version (never committed), for test/integration/nhc.test.ts. Prints the cache
# directory as its last line: manager (the operator) and crds/ (its NodeHealthCheck CRD).
#   NODECARE_CACHE   cache root (default: $XDG_CACHE_HOME/nodecare or ~/.cache/nodecare)
# Why not `go install <module>@<version>`: the proxy refuses the module's version list (403), which go install
# reads for deprecations, and it does not serve k8s.io/kube-aggregator v0.34.7 (a dependency through
# openshift/library-go): the build runs in a copy of the module with that one replaced by v0.34.5, the nearest it
# serves. Cold: about 6 minutes on 2 shared cores; warm: at once.
set -euo pipefail
VERSION=v0.12.0
MODULE=github.com/medik8s/node-healthcheck-operator
AGGREGATOR=k8s.io/kube-aggregator@v0.34.5
cache=${NODECARE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nodecare}
out="$cache/nhc/$VERSION"
export GOTOOLCHAIN=${GOTOOLCHAIN:-go1.26.10} CGO_ENABLED=0 GOFLAGS="-trimpath -mod=mod"

step() { printf '[nhc] %s\n' "$*" >&2; }
fail() { step "FAILED: $*"; exit 1; }

command -v go >/dev/null || fail "go is not on PATH (Go >= 1.25 is needed to build NHC)"
if [ -x "$out/manager" ] && [ -f "$out/crds/remediation.medik8s.io_nodehealthchecks.yaml" ]; then
  step "using cached NHC $VERSION in $out"
  echo "$out"; exit 0
fi
mkdir -p "$out"
exec 9>"$out/.lock"
flock 9
if [ -x "$out/manager" ] && [ -f "$out/crds/remediation.medik8s.io_nodehealthchecks.yaml" ]; then echo "$out"; exit 0; fi

step "downloading $MODULE@$VERSION from the Go module proxy"
dir=$(cd /tmp && go mod download -json "$MODULE@$VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -n "$dir" ] && [ -d "$dir" ] || fail "go mod download $MODULE@$VERSION (is the Go module proxy reachable?)"
mkdir -p "$out/crds"
cp "$dir/config/crd/bases/remediation.medik8s.io_nodehealthchecks.yaml" "$out/crds/"
chmod -R u+w "$out/crds"

if [ ! -x "$out/manager" ]; then
  src=$(mktemp -d)
  trap 'rm -rf "$src"' EXIT
  cp -r "$dir/." "$src/"
  chmod -R u+w "$src"
  (cd "$src" && go mod edit -replace "k8s.io/kube-aggregator=$AGGREGATOR")
  step "compiling $MODULE/cmd@$VERSION (cold: several minutes on 2 cores)"
  (cd "$src" && go build -ldflags "-s -w" -o "$out/.manager" ./cmd) || fail "go build $MODULE/cmd@$VERSION"
  mv "$out/.manager" "$out/manager"
fi
step "NHC $VERSION ready"
echo "$out"
