#!/usr/bin/env bash
# Builds the local test control plane (etcd, kube-apiserver, kube-scheduler) from the Go module proxy
# into a cache outside the repository, once per pinned version. A cold build downloads ~1 GB of modules
# and compiles ~2,000 packages: expect 10-25 minutes on 2 cores. A warm cache returns at once.
#   NODECARE_CACHE     cache root (default: $XDG_CACHE_HOME/nodecare or ~/.cache/nodecare)
#   NODECARE_KUBE_DIR  the Kubernetes module to build (go.mod, go.sum, main.go; default: kube/ here, the pinned
#                      version); `npm run test:versions` points it at another version's (test/versions/run.ts)
# Prints the directory holding the binaries as its last line.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
kube_dir=${NODECARE_KUBE_DIR:-$here/kube}
version_of() { sed -n "s|^[[:space:]]*\(require \)\{0,1\}$1 \(v[0-9.]*\)$|\2|p" "$2" | head -n 1; }
kube_version=$(version_of k8s.io/kubernetes "$kube_dir/go.mod")
etcd_version=$(version_of go.etcd.io/etcd/server/v3 "$here/etcd/go.mod")
[ -n "$kube_version" ] && [ -n "$etcd_version" ] || { echo "[controlplane] FAILED: cannot read pinned versions from go.mod" >&2; exit 1; }
cache=${NODECARE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nodecare}
# The cache key covers everything that shapes the binaries, so editing the recipe rebuilds.
recipe=$(cat "$kube_dir/go.mod" "$kube_dir/go.sum" "$kube_dir/main.go" "$here/etcd/go.mod" "$here/etcd/go.sum" "$here/etcd/main.go" | sha256sum | cut -c1-12)
out="$cache/controlplane/kube-$kube_version-etcd-$etcd_version-$recipe"
export GOTOOLCHAIN=local GOFLAGS="-trimpath -mod=readonly" CGO_ENABLED=0

step() { printf '[controlplane] %s\n' "$*" >&2; }
fail() { step "FAILED: $*"; exit 1; }

command -v go >/dev/null || fail "go is not on PATH (Go >= 1.26 is needed to build the control plane)"
if [ -x "$out/kube-testenv" ] && [ -x "$out/etcd" ]; then
  step "using cached binaries in $out"
  echo "$out"; exit 0
fi
mkdir -p "$out"
exec 9>"$out/.lock"
flock 9   # a second concurrent build waits for the first instead of racing it
if [ -x "$out/kube-testenv" ] && [ -x "$out/etcd" ]; then echo "$out"; exit 0; fi

avail_kb=$(df -Pk "$cache" | awk 'NR==2 {print $4}')
[ "${avail_kb:-0}" -gt 4000000 ] || fail "less than 4 GB free under $cache (the module and build caches need ~3-5 GB)"

started=$SECONDS
elapsed() { printf '%dm%02ds' $(((SECONDS - started) / 60)) $(((SECONDS - started) % 60)); }
heartbeat() { while sleep 60; do step "  ... still $1 ($(elapsed) so far)"; done; }

build() { # name dir output ldflags
  local name=$1 dir=$2 target=$3 ldflags=$4 hb
  step "[$name] downloading Go modules (first time: several hundred MB)"
  heartbeat "downloading $name modules" & hb=$!
  (cd "$dir" && go mod download) || { kill $hb; fail "go mod download for $name (see the error above: is the Go module proxy reachable?)"; }
  kill $hb
  step "[$name] compiling (cold: many minutes on 2 cores; $(elapsed) elapsed)"
  heartbeat "compiling $name" & hb=$!
  (cd "$dir" && go build -p 2 -ldflags "$ldflags" -o "$target.tmp" .) || { kill $hb; fail "go build for $name"; }
  kill $hb
  mv "$target.tmp" "$target"
  step "[$name] done ($(elapsed) elapsed)"
}

step "building etcd $etcd_version and kube-apiserver/kube-scheduler $kube_version into $out"
build "etcd $etcd_version" "$here/etcd" "$out/etcd" "-s -w"
minor=${kube_version#v1.}; minor=${minor%%.*}
build "kubernetes $kube_version" "$kube_dir" "$out/kube-testenv" "-s -w \
  -X k8s.io/component-base/version.gitVersion=$kube_version \
  -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor \
  -X k8s.io/component-base/version.gitTreeState=clean \
  -X k8s.io/client-go/pkg/version.gitVersion=$kube_version"
step "control plane ready in $(elapsed)"
echo "$out"
