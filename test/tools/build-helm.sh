#!/usr/bin/env bash
# Builds helm (the chart tests' renderer and installer) from the Go module proxy into a cache outside the
# repository, once per pinned version (test/tools/go-install.sh). Cold: a couple of hundred MB of modules and
# a few minutes on 2 cores; warm: returns at once. Prints the path of the helm binary as its last line.
set -euo pipefail
HELM_VERSION=v4.3.1
exec bash "$(dirname "$0")/go-install.sh" helm helm.sh/helm/v4/cmd/helm "$HELM_VERSION" \
  "-X helm.sh/helm/v4/internal/version.version=$HELM_VERSION"
