#!/usr/bin/env bash
# Assembles the trees of the two local base images the test build hands the Dockerfile in place of its public
# ones (no image registry is reachable here), in the layout of those images:
#   debian-<arch>/  debian:bookworm-slim for each architecture in BASE_ARCHES (default: the host's; the
#            release adds arm64): Debian's "Priority: required" packages and their dependencies (no
#            recommends), unpacked from the host's apt sources with merged /usr, without docs, man pages or
#            locales; the release is the host's (bookworm). A foreign architecture's package lists go to a
#            directory of their own under <dir>: the host's apt configuration is not touched.
#   node/    what node:<version>-bookworm-slim adds to the host architecture's: /usr/local/bin/node, npm in
#            /usr/local/lib/node_modules/npm with /usr/local/bin/npm and npx linked to it.
# Also writes Dockerfile (FROM scratch, one stage per base; the debian stage takes the tree of TARGETARCH) and
# packages.txt (the Debian package versions, the host architecture's).
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
host_arch=$(dpkg --print-architecture)
arches=${BASE_ARCHES:-$host_arch}
rm -rf "$dir" && mkdir -p "$dir/node"
sandbox=()
[ "$(id -u)" != 0 ] || sandbox=(-o APT::Sandbox::User=root)

# debian_tree <arch>: the debian:bookworm-slim tree of one architecture into $dir/debian-<arch>.
debian_tree() {
  local arch=$1 apt=() rootfs=$dir/debian-$1 list=$dir/packages-$1.txt
  mkdir -p "$dir/debs-$arch" "$rootfs"
  if [ "$arch" != "$host_arch" ]; then
    # Another architecture's package lists, from the host's sources, in a state directory of its own.
    local state=$dir/apt-$arch
    mkdir -p "$state/lists/partial" "$state/cache/archives/partial" && : >"$state/status"
    apt=(-o "APT::Architecture=$arch" -o "APT::Architectures::=$arch" -o "Dir::State::Lists=$state/lists"
      -o "Dir::State::status=$state/status" -o "Dir::Cache=$state/cache" -o Debug::NoLocking=1)
    step "reading Debian's $arch package lists (host sources, into $state)"
    apt-get -qq "${apt[@]}" "${sandbox[@]}" update >&2 || fail "apt-get update for $arch (is the Debian mirror reachable?)"
  fi
  # What debootstrap's minbase installs: every required package, then apt resolves their dependencies against
  # an empty system (usr-is-merged names the merged-/usr choice so usrmerge's perl stays out).
  local required
  required=$(apt-cache "${apt[@]}" dumpavail | awk -v RS= -v arch="$arch" '/\nPriority: required/ && ($0 ~ "\nArchitecture: (" arch "|all)") {
    match($0, /^Package: [^\n]*/); print substr($0, 10, RLENGTH - 9) }' | sort -u)
  [ -n "$required" ] || fail "apt knows no required $arch packages (no package lists? run apt-get update)"
  # shellcheck disable=SC2086
  apt-get "${apt[@]}" -s --no-install-recommends -o Dir::State::status=/dev/null -o Debug::NoLocking=1 \
    install $required usr-is-merged 2>/dev/null | sed -n 's/^Inst \([^ ]*\) (\([^ ]*\) .*/\1=\2/p' >"$list"
  [ "$(wc -l <"$list")" -gt 30 ] || fail "apt could not resolve the required $arch packages"
  step "downloading $(wc -l <"$list") Debian $arch packages for the base ($(grep -c . <<<"$required") required and their dependencies)"
  # shellcheck disable=SC2046
  (cd "$dir/debs-$arch" && apt-get download -qq "${apt[@]}" "${sandbox[@]}" $(cat "$list") >&2) \
    || fail "apt-get download of the $arch base packages (is the Debian mirror reachable?)"
  step "unpacking them (no maintainer scripts run: the few files those make are written below)"
  # dpkg's database as debian:bookworm-slim carries it (SBOM tools and scanners read it; release/sbom.ts
  # does): each package's control fields, marked installed.
  mkdir -p "$rootfs/var/lib/dpkg"
  for deb in "$dir/debs-$arch"/*.deb; do
    dpkg-deb -x "$deb" "$rootfs" || fail "dpkg-deb -x $deb"
    dpkg-deb -f "$deb" | awk '{ print } /^Package: / { print "Status: install ok installed" } END { print "" }' \
      >>"$rootfs/var/lib/dpkg/status.new" || fail "dpkg-deb -f $deb"
  done
  mv "$rootfs/var/lib/dpkg/status.new" "$rootfs/var/lib/dpkg/status"
  rm -rf "$dir/debs-$arch" "$dir/apt-$arch"
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
  # The loader cache, for the host architecture only (Debian's loader searches the multiarch directories
  # without one, so another architecture's tree does without).
  if [ "$(id -u)" = 0 ] && [ "$arch" = "$host_arch" ]; then /sbin/ldconfig -r "$rootfs" || fail "ldconfig -r $rootfs"; fi
}
for arch in $arches; do debian_tree "$arch"; done
cp "$dir/packages-$host_arch.txt" "$dir/packages.txt"

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
ARG TARGETARCH
COPY debian-\${TARGETARCH}/ /
CMD ["bash"]

FROM debian AS node
COPY node/ /
$node_env
CMD ["node"]
DOCKERFILE
step "base trees ready in $dir ($(du -sm "$dir/debian-$host_arch" | cut -f1) MB Debian $host_arch, $(du -sm "$dir/node" | cut -f1) MB Node)"
