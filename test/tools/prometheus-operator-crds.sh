#!/usr/bin/env bash
# The Prometheus Operator's ServiceMonitor and PrometheusRule CRDs, for the tests that install the chart's
# monitoring objects on the real API server: from the operator's Go module (the Go module proxy, into the Go
# module cache), example/prometheus-operator-crd/. Prints the two files' paths, one a line.
set -euo pipefail
version=v0.85.0
command -v go >/dev/null || { echo "go is not on PATH (needed to fetch the Prometheus Operator CRDs)" >&2; exit 1; }
dir=$(cd /tmp && GOFLAGS=-mod=mod go mod download -json "github.com/prometheus-operator/prometheus-operator@$version" |
  sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -d "$dir" ] || { echo "go mod download prometheus-operator@$version gave no directory" >&2; exit 1; }
for crd in servicemonitors prometheusrules; do
  file="$dir/example/prometheus-operator-crd/monitoring.coreos.com_$crd.yaml"
  [ -f "$file" ] || { echo "$file is missing" >&2; exit 1; }
  echo "$file"
done
