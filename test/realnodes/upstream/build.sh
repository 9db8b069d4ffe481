#!/usr/bin/env bash
# Builds the upstream node extensions of the real-node tests (docs/extensions.md) from their own source, as the
# Go module proxy serves it, into a cache outside the repository, once per pinned version and recipe:
#   npd      k8s.io/node-problem-detector: node-problem-detector, with the module's config/ directory, laid out
#            as its Dockerfile lays out its image; without the plugins its README says how to leave out and
#            the tests do not use (the Stackdriver exporter, the system stats monitor), and without
#            health-checker, which fails on Linux at this version (docs/extensions.md)
#   dra      sigs.k8s.io/dra-example-driver: dra-example-kubeletplugin
#   otelcol  the OpenTelemetry Collector, generated and compiled by the collector's builder from
#            otelcol/builder-config.yaml
#   nfd      sigs.k8s.io/node-feature-discovery: nfd-master, nfd-worker and nfd-gc
# Each component gets a directory $cache/realnodes/upstream/<component>-<version>-<recipe> holding bin/, the
# OCI image archive image.oci.tar (image.ts, for `ctr -n k8s.io images import`) and module-dir: where the
# module's source (and so its upstream manifests) is in the Go module cache. Binaries are static
# (CGO_ENABLED=0), stripped, built with -p 2.
#   build.sh [component...]   (default: all)
#   NODECARE_CACHE   cache root (default: $XDG_CACHE_HOME/nodecare or ~/.cache/nodecare)
# Prints one line per component, `<component> <directory>`, on stdout; progress goes to stderr.
# Cold (empty Go module and build caches) on this kind of 2-core machine, shared with other builds (load 5-7):
# npd 2m03s, dra 2m30s, otelcol 2m30s, about 7 minutes in all; with a warm build cache each takes seconds (the
# link and the image). Under a heavier load (8-15), with an empty build cache, they took about 6 minutes
# each: npd 6m02s (with health-checker and every plugin), dra 6m23s, otelcol 6m12s, nfd 6m15s (221
# CPU-seconds, about 2 minutes on an idle machine).
#
# Not built, because the Go module proxy refuses them (every version tried answers 403 "This module version is
# not available"): github.com/kubernetes-csi/csi-driver-host-path and github.com/kubernetes-csi/node-driver-registrar
# (see docs/extensions.md, "CSI driver").
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
npd_module=k8s.io/node-problem-detector npd_version=v1.34.0
dra_module=sigs.k8s.io/dra-example-driver dra_version=v0.2.1
otelcol_builder=go.opentelemetry.io/collector/cmd/builder otelcol_version=v0.165.0
# The collector module at the builder's version holds the upstream Kubernetes example (examples/k8s).
otelcol_module=go.opentelemetry.io/collector
nfd_module=sigs.k8s.io/node-feature-discovery nfd_version=v0.18.3

cache=${NODECARE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nodecare}
export GOTOOLCHAIN=local CGO_ENABLED=0
step() { printf '[upstream] %s\n' "$*" >&2; }
fail() { step "FAILED: $*"; exit 1; }
command -v go >/dev/null || fail "go is not on PATH (Go >= 1.26 is needed)"
# image.ts runs on the Node.js the repository pins (node_modules/.bin/node, >= 24: it strips the types).
node=${NODE:-$here/../../../node_modules/.bin/node}
[ -x "$node" ] || fail "no Node.js at $node (npm ci installs the pinned one; NODE names another)"

components=("$@")
[ ${#components[@]} -gt 0 ] || components=(npd dra otelcol nfd)
for c in "${components[@]}"; do
  case $c in npd | dra | otelcol | nfd) ;; *) fail "unknown component $c (npd, dra, otelcol, nfd)" ;; esac
done

# Where `go mod download` put a module's source (read-only), downloading it if needed.
module_dir() {
  local json dir
  json=$(go mod download -json "$1" 2>&1) || fail "go mod download $1: $(printf '%s' "$json" | sed -n 's/.*"Error": "\(.*\)".*/\1/p')"
  dir=$(printf '%s' "$json" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [ -d "$dir" ] || fail "go mod download $1 gave no module directory"
  printf '%s\n' "$dir"
}

# A build is complete with its image and its module's source still in the Go module cache (the tests read
# the upstream manifests there; `go clean -modcache` removes it, and then the build is redone).
complete() { [ -s "$1/image.oci.tar" ] && [ -s "$1/module-dir" ] && [ -d "$(cat "$1/module-dir")" ]; }

build_component() {
  local c=$1 version recipe out started hb=
  eval "version=\$${c}_version"
  # The cache key covers everything that shapes the component, so editing the recipe rebuilds.
  recipe=$(cd "$here" && cat build.sh image.ts upstream.ts ../oci.ts $([ "$c" = otelcol ] && echo otelcol/builder-config.yaml) | sha256sum | cut -c1-12)
  out="$cache/realnodes/upstream/$c-$version-$recipe"
  if complete "$out"; then
    step "[$c] using the cached build in $out"
    echo "$c $out"
    return
  fi
  mkdir -p "$out/bin"
  exec 9>"$out/.lock"
  flock 9 # a second concurrent build waits for the first instead of racing it
  if complete "$out"; then echo "$c $out"; exec 9>&-; return; fi
  started=$SECONDS
  elapsed() { printf '%dm%02ds' $(((SECONDS - started) / 60)) $(((SECONDS - started) % 60)); }
  heartbeat() { while sleep 60; do step "  ... still $1 ($(elapsed) so far)"; done; }
  stop_heartbeat() { [ -z "$hb" ] || kill "$hb" 2>/dev/null || true; hb=; }
  trap stop_heartbeat EXIT
  local flags=(-p 2 -trimpath)
  case $c in
    npd)
      step "[npd] downloading $npd_module@$npd_version"
      local src
      src=$(module_dir "$npd_module@$npd_version")
      step "[npd] compiling node-problem-detector ($(elapsed) elapsed)"
      heartbeat "compiling node-problem-detector" & hb=$!
      # As its Makefile builds it for Linux, less the journald tag (that plugin needs cgo and libsystemd), with
      # its README's build tags for the plugins left out.
      (cd "$src" && go build "${flags[@]}" -mod=readonly -o "$out/bin/node-problem-detector" \
        -tags "disable_stackdriver_exporter disable_system_stats_monitor" \
        -ldflags "-s -w -X $npd_module/pkg/version.version=$npd_version" \
        ./cmd/nodeproblemdetector) || fail "go build of node-problem-detector (see above)"
      stop_heartbeat
      printf '%s\n' "$src" > "$out/module-dir"
      ;;
    dra)
      step "[dra] downloading $dra_module@$dra_version"
      local src
      src=$(module_dir "$dra_module@$dra_version")
      step "[dra] compiling dra-example-kubeletplugin ($(elapsed) elapsed)"
      heartbeat "compiling dra-example-kubeletplugin" & hb=$!
      (cd "$src" && go build "${flags[@]}" -mod=readonly -o "$out/bin/dra-example-kubeletplugin" -ldflags "-s -w" \
        ./cmd/dra-example-kubeletplugin) || fail "go build of dra-example-kubeletplugin (see above)"
      stop_heartbeat
      printf '%s\n' "$src" > "$out/module-dir"
      ;;
    otelcol)
      step "[otelcol] building the collector's builder $otelcol_builder@$otelcol_version"
      heartbeat "building the collector's builder" & hb=$!
      GOBIN="$out/tools" go install "${flags[@]}" -ldflags "-s -w" "$otelcol_builder@$otelcol_version" ||
        fail "go install $otelcol_builder@$otelcol_version (see above)"
      stop_heartbeat
      step "[otelcol] generating and compiling the distribution of otelcol/builder-config.yaml ($(elapsed) elapsed)"
      heartbeat "compiling the collector" & hb=$!
      rm -rf "$out/dist"
      # The builder runs `go mod tidy` and `go build -trimpath -ldflags=-s -w` itself; GOFLAGS carries -p 2.
      GOFLAGS=-p=2 "$out/tools/builder" --config="$here/otelcol/builder-config.yaml" --output-path="$out/dist" >&2 ||
        fail "the collector's builder (see above)"
      stop_heartbeat
      cp "$out/dist/otelcol" "$out/bin/otelcol"
      rm -rf "$out/dist" "$out/tools"
      module_dir "$otelcol_module@$otelcol_version" > "$out/module-dir"
      ;;
    nfd)
      step "[nfd] downloading $nfd_module@$nfd_version and its API module"
      local src api
      src=$(module_dir "$nfd_module@$nfd_version")
      api=$(module_dir "$nfd_module/api/nfd@$nfd_version")
      # Its go.mod replaces the API module with ./api/nfd, a nested module the module's zip leaves out: build
      # in a copy with the API module where the replace points.
      rm -rf "$out/src" && cp -r "$src" "$out/src" && chmod -R u+w "$out/src"
      cp -r "$api" "$out/src/api/nfd" && chmod -R u+w "$out/src/api/nfd"
      step "[nfd] compiling nfd-master, nfd-worker and nfd-gc ($(elapsed) elapsed)"
      heartbeat "compiling node-feature-discovery" & hb=$!
      # As its Dockerfile builds the image (make install, HOSTMOUNT_PREFIX /host-: the worker reads the host's
      # /sys, /boot, ... where its DaemonSet mounts them); CGO_ENABLED=0 gives what its osusergo,netgo tags do.
      (cd "$out/src" && go build "${flags[@]}" -mod=readonly -o "$out/bin/" \
        -ldflags "-s -w -X $nfd_module/pkg/version.version=$nfd_version -X $nfd_module/pkg/utils/hostpath.pathPrefix=/host-" \
        ./cmd/nfd-master ./cmd/nfd-worker ./cmd/nfd-gc) || fail "go build of node-feature-discovery (see above)"
      stop_heartbeat
      rm -rf "$out/src"
      printf '%s\n' "$src" > "$out/module-dir"
      ;;
  esac
  "$node" "$here/image.ts" "$c" "$out" || fail "writing the image archive of $c"
  step "[$c] done in $(elapsed): $(du -sh "$out/image.oci.tar" | cut -f1) image in $out"
  trap - EXIT
  exec 9>&-
  echo "$c $out"
}

for c in "${components[@]}"; do build_component "$c"; done
