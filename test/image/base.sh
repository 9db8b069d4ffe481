#!/usr/bin/env bash
# Assembles the trees of the two local base images the test build hands the Dockerfile in place of its public
# ones (no image registry is reachable here), in the layout of those images:
#   debian/  debian:bookworm-slim: Debian's "Priority: required" packages and their dependencies (no
#            recommends), unpacked from the host's apt sources with merged /usr, without docs, man pages or
#            locales; the release is the host's (bookworm).
#   node/    what node:<version>-bookworm-slim adds to it: /usr/local/bin/node, npm in
#            /usr/local/lib/node_modules/npm with /usr/local/bin/npm and npx linked to it.
# Also writes Dockerfile (FROM scratch, one stage per base) and packages.txt (the Debian package versions).
# With a CA bundle (the host's NODE_EXTRA_CA_CERTS, where TLS to the npm registry is intercepted), the Node
# base trusts it too, so the build stage's npm ci reaches the registry as the host's npm does; the runtime
# base and so the image never get it.
#   base.sh <dir> <node binary> <npm tarball> [CA bundle]
set -euo pipefail
dir=$1 node_bin=$2 npm_tgz=$3 ca=${4:-}
step() { printf '[image] %s\n' "$*" >&2; }
fail() { step "FAILED: $*"; exit 1; }
command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null || fail "apt-get and dpkg-deb are needed (a Debian host)"
[ -x "$node_bin" ] || fail "no node binary at $node_bin (run npm ci)"
rm -rf "$dir" && mkdir -p "$dir/debs" "$dir/debian" "$dir/node"

# What debootstrap's minbase installs: every required package, then apt resolves their dependencies against
# an empty system (usr-is-merged names the merged-/usr choice so usrmerge's perl stays out).
required=$(apt-cache dumpavail | awk -v RS= '/\nPriority: required/ && /\nArchitecture: (amd64|all)/ {
  match($0, /^Package: [^\n]*/); print substr($0, 10, RLENGTH - 9) }' | sort -u)
[ -n "$required" ] || fail "apt knows no required packages (no package lists? run apt-get update)"
# shellcheck disable=SC2086
apt-get -s --no-install-recommends -o Dir::State::status=/dev/null -o Debug::NoLocking=1 \
  install $required usr-is-merged 2>/dev/null | sed -n 's/^Inst \([^ ]*\) (\([^ ]*\) .*/\1=\2/p' >"$dir/packages.txt"
[ "$(wc -l <"$dir/packages.txt")" -gt 30 ] || fail "apt could not resolve the required packages"
step "downloading $(wc -l <"$dir/packages.txt") Debian packages for the base ($(grep -c . <<<"$required") required and their dependencies)"
sandbox=()
[ "$(id -u)" != 0 ] || sandbox=(-o APT::Sandbox::User=root)
# shellcheck disable=SC2046
(cd "$dir/debs" && apt-get download -qq "${sandbox[@]}" $(cat "$dir/packages.txt") >&2) \
  || fail "apt-get download of the base packages (is the Debian mirror reachable?)"
step "unpacking them (no maintainer scripts run: the few files those make are written below)"
rootfs=$dir/debian
for deb in "$dir"/debs/*.deb; do dpkg-deb -x "$deb" "$rootfs" || fail "dpkg-deb -x $deb"; done
rm -rf "$dir/debs"
# Merged /usr, as Debian bookworm's own images have it.
for d in bin sbin lib lib32 lib64 libx32; do
  if [ -d "$rootfs/$d" ] && [ ! -L "$rootfs/$d" ]; then
    mkdir -p "$rootfs/usr/$d" && cp -a "$rootfs/$d/." "$rootfs/usr/$d/" && rm -rf "${rootfs:?}/$d"
  fi
  [ ! -d "$rootfs/usr/$d" ] || ln -sfn "usr/$d" "$rootfs/$d"
done
# What debian:bookworm-slim leaves out (its dpkg path-exclude list), copyright files kept.
find "$rootfs/usr/share/doc" -type f ! -name copyright -delete
find "$rootfs/usr/share/doc" -depth -type d -empty -delete
rm -rf "$rootfs"/usr/share/{man,info,groff,linda,lintian} "$rootfs"/usr/share/locale/*
# What base-passwd's and the login packages' maintainer scripts would have written.
cp "$rootfs/usr/share/base-passwd/passwd.master" "$rootfs/etc/passwd"
cp "$rootfs/usr/share/base-passwd/group.master" "$rootfs/etc/group"
sed 's/^\([^:]*\):.*/\1:*:19000:0:99999:7:::/' "$rootfs/etc/passwd" >"$rootfs/etc/shadow"
chmod 0640 "$rootfs/etc/shadow"
mkdir -p "$rootfs"/{tmp,var/tmp,root,run,proc,sys,dev} && chmod 1777 "$rootfs/tmp" "$rootfs/var/tmp"
if [ "$(id -u)" = 0 ]; then /sbin/ldconfig -r "$rootfs" || fail "ldconfig -r $rootfs"; fi

# The Node layer, laid out as the official node images have it.
mkdir -p "$dir/node/usr/local/bin" "$dir/node/usr/local/lib/node_modules/npm"
cp "$node_bin" "$dir/node/usr/local/bin/node" && chmod 0755 "$dir/node/usr/local/bin/node"
tar -xzf "$npm_tgz" -C "$dir/node/usr/local/lib/node_modules/npm" --strip-components=1 --no-same-owner \
  || fail "unpacking $npm_tgz"
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$dir/node/usr/local/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$dir/node/usr/local/bin/npx"

node_env=
if [ -n "$ca" ]; then
  mkdir -p "$dir/node/usr/local/share/ca-certificates"
  cp "$ca" "$dir/node/usr/local/share/ca-certificates/host-extra-ca.crt" || fail "copying the CA bundle $ca"
  node_env="ENV NODE_EXTRA_CA_CERTS=/usr/local/share/ca-certificates/host-extra-ca.crt"
fi
cat >"$dir/Dockerfile" <<DOCKERFILE
FROM scratch AS debian
COPY debian/ /
CMD ["bash"]

FROM debian AS node
COPY node/ /
$node_env
CMD ["node"]
DOCKERFILE
step "base trees ready in $dir ($(du -sm "$dir/debian" | cut -f1) MB Debian, $(du -sm "$dir/node" | cut -f1) MB Node)"
