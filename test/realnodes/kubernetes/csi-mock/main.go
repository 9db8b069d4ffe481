// Command csi-mock serves Kubernetes' own mock CSI driver, unchanged: the Identity, Controller and Node servers
// of k8s.io/kubernetes/test/e2e/storage/drivers/csi-test/mock/service behind the gRPC server of
// .../csi-test/driver (its default interceptor, which logs every call as JSON), as the e2e storage tests run it
// in process (test/e2e/storage/drivers/csi.go, mockCSIDriver.PrepareTest, embedded mode). Only the command line
// is this file's: the flags the `mock` container of test/e2e/testing-manifests/storage-csi/mock/
// csi-mock-driver.yaml passes, and those e2e appends to it, so that manifest runs with its args unchanged.
//
//	csi-mock --drivername=mock.storage.k8s.io --nodeid=$(KUBE_NODE_NAME) --endpoint=/csi/csi.sock \
//	  --statedir=/tmp/csi-hotpath-data -v=5
//
// --nodeid and --statedir are accepted and not used: the mock service keeps its volumes in memory, and
// service.New answers NodeGetInfo with the driver name as its node ID.
package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"k8s.io/klog/v2"
	"k8s.io/kubernetes/test/e2e/storage/drivers/csi-test/driver"
	"k8s.io/kubernetes/test/e2e/storage/drivers/csi-test/mock/service"
)

func main() {
	klog.InitFlags(nil)
	driverName := flag.String("drivername", service.Name, "the CSI driver name GetPluginInfo reports")
	endpoint := flag.String("endpoint", "/csi/csi.sock", "the unix socket to serve on (a path, or unix://path)")
	flag.String("nodeid", "", "accepted for the manifest; the mock service reports its driver name as the node ID")
	flag.String("statedir", "", "accepted for the manifest; the mock service keeps its state in memory")
	enableAttach := flag.Bool("enable-attach", false, "ControllerPublish/Unpublish (service.Config.DisableAttach false)")
	enableTopology := flag.Bool("enable-topology", false, "service.Config.EnableTopology")
	attachLimit := flag.Int64("attach-limit", 0, "service.Config.AttachLimit")
	nodeExpand := flag.Bool("node-expand-required", false, "service.Config.NodeExpansionRequired")
	flag.Parse()

	path := strings.TrimPrefix(*endpoint, "unix://")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		fail("socket directory: %v", err)
	}
	// A socket left by a killed run of this container would make Listen fail.
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		fail("remove the old socket: %v", err)
	}
	listener, err := net.Listen("unix", path)
	if err != nil {
		fail("listen on %s: %v", path, err)
	}
	s := service.New(service.Config{
		DisableAttach:         !*enableAttach,
		DriverName:            *driverName,
		AttachLimit:           *attachLimit,
		NodeExpansionRequired: *nodeExpand,
		EnableTopology:        *enableTopology,
	})
	csiDriver := driver.NewCSIDriver(&driver.CSIDriverServers{Controller: s, Identity: s, Node: s})
	if err := csiDriver.Start(listener, nil); err != nil {
		fail("start: %v", err)
	}
	klog.InfoS("Serving the mock CSI driver", "driver", *driverName, "endpoint", path)

	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	<-signals
	csiDriver.Stop()
	_ = os.Remove(path)
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "csi-mock: "+format+"\n", args...)
	os.Exit(1)
}
