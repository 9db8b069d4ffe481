#!/usr/bin/env bash
# Builds krew, kubectl's plugin manager, from the Go module proxy into a cache outside the repository, once per
# pinned version (test/tools/go-install.sh): test/integration/release.test.ts installs the release's
# kubectl-nodecare with it, from nodecare-krew.yaml and the archive alone, as `kubectl krew install
# --manifest=... --archive=...` does for a user. Cold on 2 cores: under a minute. Warm: returns at once. Prints
# the path of the krew binary as its last line.
set -euo pipefail
# v0.4.3 is the newest krew the Go module proxy serves here.
exec bash "$(dirname "$0")/go-install.sh" krew sigs.k8s.io/krew/cmd/krew v0.4.3
