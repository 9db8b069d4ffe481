#!/usr/bin/env bash
# Builds BuildKit (buildkitd and buildctl) from the Go module proxy into a cache outside the repository, once
# per pinned version and recipe (test/image/build.sh runs them, with Debian's runc from test/image/debs.sh).
# Cold: ~100 MB of modules and 1.5-3 minutes of compiling on 2 cores; warm: returns at once. A second
# concurrent build waits for the first.
#   NODECARE_CACHE   cache root (default: $XDG_CACHE_HOME/nodecare or ~/.cache/nodecare)
# Prints the directory holding buildkitd and buildctl as its last line.
set -euo pipefail
BUILDKIT_VERSION=v0.34.2
here=$(cd "$(dirname "$0")" && pwd)
cache=${NODECARE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nodecare}
# The cache key covers this recipe, so editing it rebuilds.
recipe=$(sha256sum <"$here/buildkit.sh" | cut -c1-12)
out="$cache/buildkit-$BUILDKIT_VERSION-$recipe"
# go.mod asks for a newer Go than some machines have; the go command fetches that toolchain if needed.
export GOTOOLCHAIN=${GOTOOLCHAIN:-auto} CGO_ENABLED=0

step() { printf '[buildkit] %s\n' "$*" >&2; }
fail() { step "FAILED: $*"; exit 1; }

if [ -x "$out/bin/buildkitd" ] && [ -x "$out/bin/buildctl" ]; then
  step "using cached BuildKit $BUILDKIT_VERSION in $out/bin"
  echo "$out/bin"; exit 0
fi
command -v go >/dev/null || fail "go is not on PATH (Go >= 1.26 is needed to build BuildKit)"
mkdir -p "$out"
exec 9>"$out/.lock"
flock 9   # a second concurrent build waits for the first instead of racing it
if [ -x "$out/bin/buildkitd" ] && [ -x "$out/bin/buildctl" ]; then echo "$out/bin"; exit 0; fi

started=$SECONDS
elapsed() { printf '%dm%02ds' $(((SECONDS - started) / 60)) $(((SECONDS - started) % 60)); }
hb=
# Its sleep holds neither stderr (a reader waits for that to close) nor the lock.
heartbeat() { ( while sleep 30 </dev/null >/dev/null 2>&1; do step "  ... still $1 ($(elapsed) so far)"; done ) 9>&- & hb=$!; }
quiet() { [ -z "$hb" ] || kill "$hb" 2>/dev/null || true; hb=; }
trap quiet EXIT

# `go install …@version` is refused (BuildKit's go.mod has exclude directives): build inside a copy of the
# module instead, letting go resolve against its own go.mod.
step "downloading github.com/moby/buildkit@$BUILDKIT_VERSION from the Go module proxy"
heartbeat "downloading BuildKit"
GOFLAGS= go mod download -json "github.com/moby/buildkit@$BUILDKIT_VERSION" >"$out/module.json" \
  || fail "go mod download github.com/moby/buildkit@$BUILDKIT_VERSION (is the Go module proxy reachable?)"
quiet
dir=$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p' "$out/module.json")
[ -n "$dir" ] && [ -d "$dir" ] || fail "go mod download printed no module directory (see $out/module.json)"
rm -rf "$out/src" "$out/.tmp" && cp -R "$dir" "$out/src" && chmod -R u+w "$out/src"
step "compiling buildkitd and buildctl (cold: 1.5-3 minutes on 2 cores)"
heartbeat "compiling BuildKit"
(cd "$out/src" && GOFLAGS="-mod=mod -trimpath" go build -p 2 -o "$out/.tmp/" \
  -ldflags "-s -w -X github.com/moby/buildkit/version.Version=$BUILDKIT_VERSION" \
  ./cmd/buildkitd ./cmd/buildctl) || fail "go build of BuildKit's cmd/buildkitd and cmd/buildctl"
quiet
mkdir -p "$out/bin"
mv "$out/.tmp/buildkitd" "$out/.tmp/buildctl" "$out/bin/"
rm -rf "$out/.tmp" "$out/src" "$out/module.json"
step "BuildKit $BUILDKIT_VERSION ready in $(elapsed)"
echo "$out/bin"
