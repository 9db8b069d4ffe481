#!/usr/bin/env bash
# Unpacks Debian packages (the host's apt sources and release) into the cache without installing anything:
# `apt-get download` then `dpkg-deb -x`, one directory per package and version, $cache/debs/<pkg>_<version>.
# Nothing is configured and no maintainer script runs. If apt has no package lists yet, runs `apt-get update`
# once (as root). Prints each package's directory, one a line, in the order given.
#   debs.sh <package>...
#   NODECARE_CACHE   cache root (default: $XDG_CACHE_HOME/nodecare or ~/.cache/nodecare)
set -euo pipefail
cache=${NODECARE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nodecare}
step() { printf '[debs] %s\n' "$*" >&2; }
fail() { step "FAILED: $*"; exit 1; }
[ $# -gt 0 ] || fail "usage: debs.sh <package>..."
command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null || fail "apt-get and dpkg-deb are needed (a Debian host)"

candidate() { apt-cache policy "$1" 2>/dev/null | sed -n 's/^[[:space:]]*Candidate: //p'; }
if [ -z "$(candidate "$1")" ] || [ "$(candidate "$1")" = "(none)" ]; then
  [ "$(id -u)" = 0 ] || fail "apt knows no package $1 (no package lists?) and only root can run apt-get update"
  step "apt has no candidate for $1: running apt-get update"
  apt-get update -qq >&2 || fail "apt-get update"
fi
mkdir -p "$cache/debs"
# As root apt downloads as the _apt user, which cannot write into a private temporary directory.
sandbox=()
[ "$(id -u)" != 0 ] || sandbox=(-o APT::Sandbox::User=root)
for pkg in "$@"; do
  version=$(candidate "$pkg")
  [ -n "$version" ] && [ "$version" != "(none)" ] || fail "apt knows no package $pkg"
  dir="$cache/debs/${pkg}_${version}"
  if [ ! -e "$dir/.unpacked" ]; then
    exec 9>"$dir.lock"
    flock 9
    if [ ! -e "$dir/.unpacked" ]; then
      step "unpacking Debian's $pkg $version into $dir"
      tmp=$(mktemp -d "$cache/debs/.${pkg}.XXXXXX")
      (cd "$tmp" && apt-get download -qq "${sandbox[@]}" "$pkg=$version" >&2) || { rm -rf "$tmp"; fail "apt-get download $pkg=$version (is the Debian mirror reachable?)"; }
      # Another tool may have unpacked the same package here already: unpacking over it rewrites the same files.
      if [ -d "$dir" ]; then target=$dir; else target=$tmp/root; mkdir "$target"; fi
      dpkg-deb -x "$tmp"/*.deb "$target" || { rm -rf "$tmp"; fail "dpkg-deb -x of $pkg"; }
      [ "$target" = "$dir" ] || mv "$target" "$dir"
      rm -rf "$tmp"
      touch "$dir/.unpacked"
    fi
    exec 9>&-
  fi
  echo "$dir"
done
