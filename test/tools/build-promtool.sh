#!/usr/bin/env bash
# Builds promtool (checks and unit-tests the alert rules in manifests/monitoring/) from the Go module proxy into
# a cache outside the repository, once per pinned version (test/tools/go-install.sh). Built with Prometheus's
# `remove_all_sd` tag: rule checks and rule unit tests need none of its service-discovery plugins, whose cloud
# SDKs were most of the build (cold on 2 cores: about 3 minutes with the tag, about 10 without). Warm: returns
# at once. Prints the path of the promtool binary as its last line.
set -euo pipefail
# Prometheus v3.16.0 (its Go module is versioned v0.<major><minor>.<patch>).
exec bash "$(dirname "$0")/go-install.sh" promtool github.com/prometheus/prometheus/cmd/promtool v0.316.0 "" remove_all_sd
