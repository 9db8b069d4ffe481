#!/usr/bin/env bash
# Builds the parts of a real test node into a cache outside the repository, once per pinned version:
#   kubelet        compiled from the Go module proxy at the control plane's Kubernetes version (kubelet/go.mod
#                  pins the same k8s.io/kubernetes and staging replacements as ../controlplane/kube/go.mod);
#                  cold ~4-6 min on 2 cores, seconds with a warm Go build cache
#   containerd, containerd-shim-runc-v2, ctr, runc, CNI plugins (bridge, host-local, loopback)
#                  extracted from Debian's packages (apt-get download + dpkg-deb -x: the system is not changed)
#   pause          a tiny static program, the pod sandbox's only process (realnodes.ts wraps it in an image)
#   incluster      a tiny static in-cluster API client (incluster/main.go) for test images
#   testbin        the test workloads (testbin/main.go): a device plugin, a readiness stand-in, pause
#   k8s/           upstream extensions from the same Kubernetes tree (kubernetes/go.mod: the same pins plus
#                  `tool` lines): kube-proxy, test/images/sample-device-plugin, stub-plugin (Kubernetes'
#                  device plugin stub, unchanged, with a control socket: kubernetes/stub-plugin/main.go),
#                  csi-mock (the e2e tests' mock CSI driver, unchanged: kubernetes/csi-mock/main.go) and
#                  csi-registrar (nodecare's own registrar to node-driver-registrar's contract, which the Go
#                  module proxy does not serve: kubernetes/csi-registrar/main.go); about 1 min on top of a warm
#                  kubelet build (they share its Go build cache)
#   NODECARE_CACHE   cache root (default: $XDG_CACHE_HOME/nodecare or ~/.cache/nodecare)
# Prints the directory holding the parts as its last line.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
version_of() { sed -n "s|^[[:space:]]*\(require \)\{0,1\}$1 \(v[0-9.]*\)$|\2|p" "$2" | head -n 1; }
kube_version=$(version_of k8s.io/kubernetes "$here/kubelet/go.mod")
cp_version=$(version_of k8s.io/kubernetes "$here/../controlplane/kube/go.mod")
[ -n "$kube_version" ] || { echo "[realnodes] FAILED: cannot read the pinned Kubernetes version from kubelet/go.mod" >&2; exit 1; }
[ "$kube_version" = "$cp_version" ] || { echo "[realnodes] FAILED: kubelet/go.mod pins $kube_version but the control plane pins $cp_version: regenerate kubelet/go.mod (see kubelet/main.go)" >&2; exit 1; }
ext_version=$(version_of k8s.io/kubernetes "$here/kubernetes/go.mod")
[ "$ext_version" = "$cp_version" ] || { echo "[realnodes] FAILED: kubernetes/go.mod pins $ext_version but the control plane pins $cp_version: regenerate it (see kubernetes/stub-plugin/main.go)" >&2; exit 1; }
# Debian packages: the versions bookworm serves (containerd 1.6.20, runc 1.1.5, CNI plugins 1.1.1).
debs="containerd runc containernetworking-plugins"
cache=${NODECARE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nodecare}
# The cache key covers everything that shapes the parts, so editing the recipe rebuilds.
recipe=$(cd "$here" && cat build.sh kubelet/go.mod kubelet/go.sum kubelet/main.go pause.c incluster/go.mod incluster/main.go testbin/go.mod testbin/go.sum testbin/main.go kubernetes/go.mod kubernetes/go.sum kubernetes/stub-plugin/main.go kubernetes/csi-mock/main.go kubernetes/csi-registrar/main.go | sha256sum | cut -c1-12)
out="$cache/realnodes/kube-$kube_version-$recipe"
export GOTOOLCHAIN=local GOFLAGS="-trimpath -mod=readonly" CGO_ENABLED=0

step() { printf '[realnodes] %s\n' "$*" >&2; }
fail() { step "FAILED: $*"; exit 1; }

complete() { [ -x "$out/bin/kubelet" ] && [ -x "$out/bin/containerd" ] && [ -x "$out/bin/runc" ] && [ -x "$out/cni/bridge" ] && [ -x "$out/pause" ] && [ -x "$out/incluster" ] && [ -x "$out/testbin" ] && [ -x "$out/k8s/kube-proxy" ] && [ -x "$out/k8s/sample-device-plugin" ] && [ -x "$out/k8s/stub-plugin" ] && [ -x "$out/k8s/csi-mock" ] && [ -x "$out/k8s/csi-registrar" ]; }
if complete; then
  step "using cached node parts in $out"
  echo "$out"; exit 0
fi
mkdir -p "$out/bin" "$out/cni"
exec 9>"$out/.lock"
flock 9   # a second concurrent build waits for the first instead of racing it
if complete; then echo "$out"; exit 0; fi

started=$SECONDS
elapsed() { printf '%dm%02ds' $(((SECONDS - started) / 60)) $(((SECONDS - started) % 60)); }
heartbeat() { while sleep 60; do step "  ... still $1 ($(elapsed) so far)"; done; }
hb=
stop_heartbeat() { [ -z "$hb" ] || kill "$hb" 2>/dev/null || true; hb=; }
trap stop_heartbeat EXIT
step "building node parts (kubelet $kube_version, Debian containerd/runc/CNI plugins, pause) into $out"

if [ ! -x "$out/bin/kubelet" ]; then
  command -v go >/dev/null || fail "go is not on PATH (Go >= 1.26 is needed to build the kubelet)"
  avail_kb=$(df -Pk "$cache" | awk 'NR==2 {print $4}')
  [ "${avail_kb:-0}" -gt 3000000 ] || fail "less than 3 GB free under $cache (the module and build caches need it)"
  step "[kubelet $kube_version] downloading Go modules (shared with the control plane's)"
  heartbeat "downloading kubelet modules" & hb=$!
  (cd "$here/kubelet" && go mod download) || fail "go mod download for the kubelet (see the error above: is the Go module proxy reachable?)"
  stop_heartbeat
  step "[kubelet $kube_version] compiling (cold: ~4-6 min on 2 cores; $(elapsed) elapsed)"
  heartbeat "compiling the kubelet" & hb=$!
  minor=${kube_version#v1.}; minor=${minor%%.*}
  (cd "$here/kubelet" && go build -p 2 -o "$out/bin/kubelet.tmp" -ldflags "-s -w \
    -X k8s.io/component-base/version.gitVersion=$kube_version \
    -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor \
    -X k8s.io/component-base/version.gitTreeState=clean \
    -X k8s.io/client-go/pkg/version.gitVersion=$kube_version" .) || fail "go build of the kubelet"
  stop_heartbeat
  mv "$out/bin/kubelet.tmp" "$out/bin/kubelet"
  step "[kubelet $kube_version] done ($(elapsed) elapsed)"
fi

if [ ! -x "$out/bin/containerd" ] || [ ! -x "$out/bin/runc" ] || [ ! -x "$out/cni/bridge" ]; then
  command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null || fail "apt-get and dpkg-deb are needed to fetch containerd, runc and the CNI plugins (a Debian system)"
  work=$(mktemp -d "$out/.debs.XXXXXX")
  if ! apt-cache show $debs >/dev/null 2>&1; then
    step "[debian] package lists missing: apt-get update"
    apt-get update -qq >&2 || fail "apt-get update (are Debian's package mirrors reachable?)"
  fi
  step "[debian] downloading $debs"
  heartbeat "downloading Debian packages" & hb=$!
  (cd "$work" && apt-get download -qq -o APT::Sandbox::User=root $debs >&2) || fail "apt-get download $debs"
  stop_heartbeat
  for deb in "$work"/*.deb; do dpkg-deb -x "$deb" "$work/root" || fail "dpkg-deb -x $deb"; done
  for b in containerd containerd-shim-runc-v2 ctr runc; do
    src=$(find "$work/root" -type f -name "$b" -perm -u+x | head -n 1)
    [ -n "$src" ] || fail "no $b binary in the Debian packages"
    cp "$src" "$out/bin/$b"
  done
  for p in bridge host-local loopback; do
    src=$(find "$work/root" -type f -path "*/cni/*" -name "$p" | head -n 1)
    [ -n "$src" ] || fail "no CNI plugin $p in containernetworking-plugins"
    cp "$src" "$out/cni/$p"
  done
  (cd "$work" && for deb in *.deb; do dpkg-deb -W --showformat='${Package} ${Version}\n' "$deb"; done) > "$out/debian-versions.txt"
  rm -rf "$work"
  step "[debian] $(paste -sd',' "$out/debian-versions.txt") ($(elapsed) elapsed)"
fi

if [ ! -x "$out/pause" ]; then
  command -v gcc >/dev/null || fail "gcc is needed to build the pause program"
  gcc -static -Os -s -o "$out/pause.tmp" "$here/pause.c" || fail "gcc -static pause.c (is a static libc installed? libc6-dev)"
  mv "$out/pause.tmp" "$out/pause"
  step "[pause] done"
fi
if [ ! -x "$out/incluster" ]; then
  (cd "$here/incluster" && go build -o "$out/incluster.tmp" -ldflags "-s -w" .) || fail "go build incluster"
  mv "$out/incluster.tmp" "$out/incluster"
  step "[incluster] done"
fi
if [ ! -x "$out/testbin" ]; then
  (cd "$here/testbin" && go build -o "$out/testbin.tmp" -ldflags "-s -w" .) || fail "go build testbin"
  mv "$out/testbin.tmp" "$out/testbin"
  step "[testbin] done"
fi
if [ ! -x "$out/k8s/kube-proxy" ] || [ ! -x "$out/k8s/sample-device-plugin" ] || [ ! -x "$out/k8s/stub-plugin" ] \
  || [ ! -x "$out/k8s/csi-mock" ] || [ ! -x "$out/k8s/csi-registrar" ]; then
  step "[kubernetes $kube_version] compiling kube-proxy, sample-device-plugin, stub-plugin, csi-mock, csi-registrar (shares the kubelet's Go build cache; $(elapsed) elapsed)"
  heartbeat "compiling kube-proxy, the device plugins and the CSI parts" & hb=$!
  minor=${kube_version#v1.}; minor=${minor%%.*}
  mkdir -p "$out/k8s.tmp"
  (cd "$here/kubernetes" && go mod download && go build -p 2 -o "$out/k8s.tmp/" -ldflags "-s -w \
    -X k8s.io/component-base/version.gitVersion=$kube_version \
    -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor \
    -X k8s.io/component-base/version.gitTreeState=clean \
    -X k8s.io/client-go/pkg/version.gitVersion=$kube_version" \
    k8s.io/kubernetes/cmd/kube-proxy k8s.io/kubernetes/test/images/sample-device-plugin ./stub-plugin ./csi-mock ./csi-registrar) \
    || fail "go build of kube-proxy, sample-device-plugin, stub-plugin, csi-mock and csi-registrar (test/realnodes/kubernetes)"
  stop_heartbeat
  rm -rf "$out/k8s" && mv "$out/k8s.tmp" "$out/k8s"
  step "[kubernetes $kube_version] kube-proxy, sample-device-plugin, stub-plugin, csi-mock, csi-registrar done ($(elapsed) elapsed)"
fi
step "node parts ready in $(elapsed)"
echo "$out"
