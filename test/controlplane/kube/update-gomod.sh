#!/usr/bin/env bash
# Regenerates go.mod for a Kubernetes version: k8s.io/kubernetes cannot be required without a
# `replace` line for every staging module it lists as `=> ./staging/src/k8s.io/...`. The list is read
# from that version's own go.mod (never hand-copied), each staging module pinned to v0.<minor>.<patch>.
# Usage: ./update-gomod.sh v1.36.3
set -euo pipefail
version=${1:?usage: $0 v1.MINOR.PATCH}
staging=v0.${version#v1.}
cd "$(dirname "$0")"
export GOTOOLCHAIN=local GOFLAGS=-mod=mod
gomod=$(go mod download -json "k8s.io/kubernetes@$version" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",*$/\1/p')
[ -n "$gomod" ] || { echo "could not download k8s.io/kubernetes@$version" >&2; exit 1; }
cat > go.mod <<GOMOD
module nodecare.test/controlplane/kube

go 1.26.0

require k8s.io/kubernetes $version
GOMOD
sed -n 's|^[[:space:]]*\(k8s.io/[^ ]*\) => ./staging/src/k8s.io/.*|\1|p' "$gomod" | while read -r m; do
  go mod edit "-replace=$m=$m@$staging"
done
go mod tidy
echo "go.mod now pins k8s.io/kubernetes $version with $(grep -c '=>' go.mod) staging replacements"
