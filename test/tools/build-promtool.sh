#!/usr/bin/env bash
# Builds promtool (checks and unit-tests the alert rules in manifests/monitoring/) from the Go module proxy into
# a cache outside the repository, once per pinned version (test/tools/go-install.sh). Cold: several hundred MB
# of modules and several minutes on 2 cores; warm: returns at once. Prints the path of the promtool binary as
# its last line.
set -euo pipefail
# Prometheus v3.16.0 (its Go module is versioned v0.<major><minor>.<patch>).
exec bash "$(dirname "$0")/go-install.sh" promtool github.com/prometheus/prometheus/cmd/promtool v0.316.0
