// Command kubelet is the upstream kubelet (k8s.io/kubernetes/cmd/kubelet) at the version the test control
// plane pins, built from the Go module proxy for the real-node harness (../build.sh).
// go.mod is ../../controlplane/kube/go.mod with this module's name, then `GOFLAGS=-mod=mod go mod tidy`:
// regenerate it that way whenever the control plane's version changes (build.sh refuses a mismatch).
package main

import (
	"context"
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kubelet/app"
)

func main() {
	os.Exit(cli.Run(app.NewKubeletCommand(context.Background())))
}
