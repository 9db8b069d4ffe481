// Command kube-testenv is a multi-call binary holding the Kubernetes components of a pinned version
// that nodecare's local test control plane runs: kube-apiserver, kube-scheduler, kube-controller-manager
// (garbage collection, namespaces, service accounts) and kubectl (apply -k of our manifests). One compile
// of the shared packages, one link.
package main

import (
	"fmt"
	"os"

	_ "time/tzdata" // as upstream kube-apiserver: CronJob time zones

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	kubectl "k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: kube-testenv kube-apiserver|kube-scheduler|kube-controller-manager|kubectl [flags]")
		os.Exit(2)
	}
	name := os.Args[1]
	os.Args = append([]string{name}, os.Args[2:]...)
	switch name {
	case "kube-apiserver":
		os.Exit(cli.Run(apiserver.NewAPIServerCommand()))
	case "kube-scheduler":
		os.Exit(cli.Run(scheduler.NewSchedulerCommand()))
	case "kube-controller-manager":
		os.Exit(cli.Run(controllermanager.NewControllerManagerCommand()))
	case "kubectl":
		if err := cli.RunNoErrOutput(kubectl.NewDefaultKubectlCommand()); err != nil {
			util.CheckErr(err)
		}
		os.Exit(0)
	}
	fmt.Fprintln(os.Stderr, "unknown component", name)
	os.Exit(2)
}
