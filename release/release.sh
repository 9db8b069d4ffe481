#!/usr/bin/env bash
# `npm run release`: the versioned release of this checkout, built and checked by one command, into one
# directory (default dist/release/v<version>/, which git ignores). docs/release.md says what each file is and
# how to push the image to a registry of your own.
#   nodecare-<version>.oci.tar   the image, an OCI layout in a tar, one index for linux/amd64 and linux/arm64,
#                                built with BuildKit from the Dockerfile (test/image/build.sh; no emulation)
#   install.yaml                 everything kustomize builds from manifests/, the image set to the release's
#   crds.yaml                    the CustomResourceDefinitions alone
#   nodecare-<version>.tgz       the Helm chart, version and appVersion the release's (helm package)
#   nodecare-<version>.spdx.json SPDX SBOM of what the image carries: the npm packages (npm sbom --omit dev),
#                                and per platform the Debian packages dpkg lists and Node.js (release/sbom.ts)
#   CHANGELOG.md                 the CHANGELOG.md section of the version
#   kubectl-nodecare-linux-<arch>.tar.gz  the single-file kubectl-nodecare (release/sea/build.ts: no Node.js
#                                needed) and LICENSE, for amd64 and arm64
#   nodecare-krew.yaml           krew's plugin manifest (release/krew/nodecare.yaml), each platform's sha256 that
#                                of its archive
#   SHA256SUMS                   sha256sum of all the above (sha256sum -c SHA256SUMS checks them)
# Then prints every artifact with its size and digest, and the image's per-platform manifests.
#   release.sh [--allow-dirty] [out dir]
#   NODECARE_RELEASE_IMAGE   the image repository install.yaml and the chart name (default: nodecare); the
#                            archive's index names <repository>:<version>
#   NODECARE_SOURCE          the org.opencontainers.image.source label and the krew manifest's homepage
#                            (default: git's origin URL)
#   NODECARE_RELEASE_URL     where the archives will be downloaded from: the krew manifest's uri is
#                            <url>/kubectl-nodecare-linux-<arch>.tar.gz (default: the bare file name, which
#                            only `kubectl krew install --manifest=... --archive=...` can use)
# Needs root (BuildKit's runc worker), kubectl (its kustomize), and builds helm and BuildKit if not cached.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
step() { printf '[release] %s\n' "$*" >&2; }
fail() { step "FAILED: $*"; exit 1; }
started=$SECONDS

allow_dirty=
if [ "${1:-}" = --allow-dirty ]; then allow_dirty=1; shift; fi
version=$(sed -n 's/^  "version": "\(.*\)",\{0,1\}$/\1/p' "$repo/package.json" | head -n 1)
[ -n "$version" ] || fail "no version in package.json"
out=${1:-$repo/dist/release/v$version}
image=${NODECARE_RELEASE_IMAGE:-nodecare}
ref=$image:$version
command -v kubectl >/dev/null || fail "kubectl is needed (kubectl kustomize builds install.yaml)"
revision=$(git -C "$repo" rev-parse HEAD 2>/dev/null) || fail "not a git checkout: the release names its commit"
if [ -n "$(git -C "$repo" status --porcelain --untracked-files=no)" ]; then
  [ -n "$allow_dirty" ] || fail "the checkout has uncommitted changes: the release would not be commit $revision (commit them, or pass --allow-dirty)"
  step "WARNING: uncommitted changes: the artifacts are $revision plus those (--allow-dirty)"
fi

# The CHANGELOG.md section of this version: from its '## [<version>]' heading to the next '## ' heading.
changelog=$(awk -v v="$version" '/^## / { on = index($0, "## [" v "]") == 1 } on' "$repo/CHANGELOG.md")
[ -n "$changelog" ] || fail "CHANGELOG.md has no '## [$version]' section: write the release notes first"

rm -rf "$out" && mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf '%s\n' "$changelog" >"$out/CHANGELOG.md"

step "image $ref for linux/amd64 and linux/arm64 (test/image/build.sh)"
NODECARE_PLATFORMS=linux/amd64,linux/arm64 NODECARE_IMAGE_REF=$ref \
  bash "$repo/test/image/build.sh" "$out/nodecare-$version.oci.tar" >/dev/null || fail "building the image"

step "install.yaml and crds.yaml (kubectl kustomize)"
mkdir -p "$work/install"
cat >"$work/install/kustomization.yaml" <<YAML
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - $(realpath --relative-to="$work/install" "$repo/manifests")
images:
  - name: nodecare
    newName: $image
    newTag: "$version"
YAML
kubectl kustomize --load-restrictor LoadRestrictionsNone "$work/install" >"$out/install.yaml" || fail "kubectl kustomize manifests/"
grep -q "image: $ref\$" "$out/install.yaml" || fail "install.yaml does not run $ref"
# crds.yaml: the CustomResourceDefinitions of install.yaml, as they are there (labels included).
awk 'function flush() { if (doc ~ /(^|\n)kind: CustomResourceDefinition\n/) printf "%s%s", (n++ ? "---\n" : ""), doc; doc = "" }
  /^---$/ { flush(); next } { doc = doc $0 "\n" } END { flush() }' "$out/install.yaml" >"$out/crds.yaml"
[ "$(grep -c '^kind: CustomResourceDefinition$' "$out/crds.yaml")" = "$(grep -c '^kind: CustomResourceDefinition$' "$out/install.yaml")" ] \
  || fail "crds.yaml does not hold the CRDs install.yaml has"

step "the Helm chart (helm package)"
helm=$(bash "$repo/test/tools/build-helm.sh" | tail -n 1) || fail "building helm (test/tools/build-helm.sh)"
# -L: the chart links the kustomize files it renders (charts/nodecare/base, components, crds).
cp -rL "$repo/charts/nodecare" "$work/nodecare"
if [ "$image" != nodecare ]; then
  sed -i "s|^  repository: nodecare\$|  repository: $image|" "$work/nodecare/values.yaml"
  grep -q "^  repository: $image\$" "$work/nodecare/values.yaml" || fail "could not set image.repository in the chart's values.yaml"
fi
"$helm" package "$work/nodecare" --version "$version" --app-version "$version" -d "$out" >/dev/null \
  || fail "helm package charts/nodecare"

step "single-file kubectl-nodecare for linux/amd64 and linux/arm64 (release/sea/build.ts), krew's manifest"
sea_started=$SECONDS
NODECARE_REVISION=$revision "$repo/node_modules/.bin/node" "$here/sea/build.ts" --out "$repo/dist/sea" >&2 \
  || fail "building the single-file kubectl-nodecare (release/sea/build.ts)"
release_url=${NODECARE_RELEASE_URL:-}
case $release_url in *[\'\|\&]*) fail "NODECARE_RELEASE_URL may not hold ', | or &: $release_url" ;; esac
homepage=${NODECARE_SOURCE:-$(git -C "$repo" remote get-url origin 2>/dev/null || true)}
case $homepage in *[\'\|\&]*) homepage= ;; esac
# Same bytes for the same executable: names sorted, owner root, the commit's time, gzip without a name or time.
mtime=$(git -C "$repo" log -1 --format=%ct)
manifest=$(sed -e "s|@VERSION@|$version|" -e "s|@HOMEPAGE@|$homepage|" "$here/krew/nodecare.yaml")
[ -n "$homepage" ] || manifest=$(printf '%s\n' "$manifest" | grep -v "^  homepage: ")
for arch in amd64 arm64; do
  name=kubectl-nodecare-linux-$arch.tar.gz
  mkdir -p "$work/sea-$arch"
  cp "$repo/dist/sea/linux-$arch/kubectl-nodecare" "$repo/LICENSE" "$work/sea-$arch/"
  chmod 0755 "$work/sea-$arch/kubectl-nodecare"
  chmod 0644 "$work/sea-$arch/LICENSE"
  tar -C "$work/sea-$arch" --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$mtime" -cf - \
    kubectl-nodecare LICENSE | gzip -n >"$out/$name" || fail "packing $name"
  sum=$(sha256sum "$out/$name" | cut -d ' ' -f 1)
  upper=LINUX_$(printf %s "$arch" | tr '[:lower:]' '[:upper:]')
  manifest=$(printf '%s\n' "$manifest" | sed -e "s|@URI_$upper@|${release_url:+${release_url%/}/}$name|" -e "s|@SHA256_$upper@|$sum|")
done
printf '%s\n' "$manifest" | grep -v '^#' >"$out/nodecare-krew.yaml"
if grep -q '@[A-Z0-9_]*@' "$out/nodecare-krew.yaml"; then fail "nodecare-krew.yaml has a placeholder left: $(grep '@[A-Z0-9_]*@' "$out/nodecare-krew.yaml")"; fi
step "single-file executables and krew manifest in $((SECONDS - sea_started))s"

step "SBOM (SPDX: npm sbom's production dependencies, and each platform image's Debian packages and Node.js)"
(cd "$repo" && npm sbom --sbom-format spdx --omit dev --package-lock-only) >"$work/npm.spdx.json" \
  || fail "npm sbom (npm 10 or later)"
node_version=$("$repo/node_modules/.bin/node" -p process.versions.node)
"$repo/node_modules/.bin/node" "$here/sbom.ts" "$work/npm.spdx.json" "$out/nodecare-$version.oci.tar" "$node_version" \
  >"$out/nodecare-$version.spdx.json" || fail "completing the SBOM with the image's packages (release/sbom.ts)"

(cd "$out" && find . -maxdepth 1 -type f ! -name SHA256SUMS -printf '%f\n' | LC_ALL=C sort | xargs sha256sum >SHA256SUMS)
step "release v$version (revision $revision) in $out, built in $(((SECONDS - started) / 60))m$(printf %02d $(((SECONDS - started) % 60)))s:"
# The list: size in bytes, sha256, name; then the image index and its platforms.
(cd "$out" && while read -r sum name; do printf '%12s  sha256:%s  %s\n' "$(stat -c %s "$name")" "$sum" "$name"; done <SHA256SUMS)
"$repo/node_modules/.bin/node" "$here/image-index.ts" "$out/nodecare-$version.oci.tar"
