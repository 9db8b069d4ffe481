// Command stub-plugin runs Kubernetes' own device plugin stub (k8s.io/kubernetes/pkg/kubelet/cm/devicemanager/
// plugin/v1beta1, the code behind test/images/sample-device-plugin) unchanged, with a control socket beside it
// so that a test can watch and drive the stub from outside: how many goroutines the process has (a
// ListAndWatch handler left behind by a cancelled stream is one that never ends), and a device health change
// made through the stub's own Update, which hands the new list to a ListAndWatch handler waiting on the stub's
// one update channel.
//
//	stub-plugin --resource example.com/stub --devices 8 --socket /var/lib/kubelet/device-plugins/stub.sock \
//	  --control /var/lib/stub-plugin/control.sock
//
// Control (HTTP over the unix socket):
//
//	GET /goroutines               {"goroutines": N}
//	PUT /health?device=ID&health=Healthy|Unhealthy
//	                              {"taken": true} once a ListAndWatch handler took the new list from Update,
//	                              {"taken": false} when none did within 5 s
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"time"

	"k8s.io/klog/v2"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
	plugin "k8s.io/kubernetes/pkg/kubelet/cm/devicemanager/plugin/v1beta1"
)

func main() {
	resource := flag.String("resource", "example.com/stub", "the extended resource to register")
	count := flag.Int("devices", 8, "how many devices, all Healthy at start")
	socket := flag.String("socket", pluginapi.DevicePluginPath+"stub.sock", "the plugin's socket")
	control := flag.String("control", "/var/lib/stub-plugin/control.sock", "the control socket")
	flag.Parse()
	ctx := context.Background()
	logger := klog.FromContext(ctx)

	var mu sync.Mutex
	devs := make([]*pluginapi.Device, *count)
	for i := range devs {
		devs[i] = &pluginapi.Device{ID: fmt.Sprintf("Dev-%d", i+1), Health: pluginapi.Healthy}
	}
	stub := plugin.NewDevicePluginStub(logger, clone(devs), *socket, *resource, false, false)
	if err := stub.Start(ctx); err != nil {
		fail("start: %v", err)
	}
	if err := stub.Register(ctx, pluginapi.KubeletSocket, *resource, pluginapi.DevicePluginPath); err != nil {
		fail("register: %v", err)
	}
	go stub.Watch(ctx, pluginapi.KubeletSocket, *resource, pluginapi.DevicePluginPath)

	mux := http.NewServeMux()
	mux.HandleFunc("GET /goroutines", func(w http.ResponseWriter, _ *http.Request) {
		reply(w, map[string]int{"goroutines": runtime.NumGoroutine()})
	})
	mux.HandleFunc("PUT /health", func(w http.ResponseWriter, r *http.Request) {
		id, health := r.URL.Query().Get("device"), r.URL.Query().Get("health")
		if health != pluginapi.Healthy && health != pluginapi.Unhealthy {
			http.Error(w, "health must be Healthy or Unhealthy", http.StatusBadRequest)
			return
		}
		mu.Lock()
		found := false
		for _, d := range devs {
			if d.ID == id {
				d.Health, found = health, true
			}
		}
		list := clone(devs)
		mu.Unlock()
		if !found {
			http.Error(w, "no device "+id, http.StatusNotFound)
			return
		}
		taken := make(chan struct{})
		go func() { stub.Update(list); close(taken) }()
		select {
		case <-taken:
			reply(w, map[string]bool{"taken": true})
		case <-time.After(5 * time.Second):
			reply(w, map[string]bool{"taken": false})
		}
	})
	if err := os.MkdirAll(filepath.Dir(*control), 0o755); err != nil {
		fail("control dir: %v", err)
	}
	_ = os.Remove(*control)
	listener, err := net.Listen("unix", *control)
	if err != nil {
		fail("control socket: %v", err)
	}
	go func() { _ = http.Serve(listener, mux) }()
	logger.Info("stub device plugin serving", "resource", *resource, "devices", *count, "socket", *socket, "control", *control)

	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	<-signals
	_ = stub.Stop(logger)
}

func clone(devs []*pluginapi.Device) []*pluginapi.Device {
	out := make([]*pluginapi.Device, len(devs))
	for i, d := range devs {
		out[i] = &pluginapi.Device{ID: d.ID, Health: d.Health}
	}
	return out
}

func reply(w http.ResponseWriter, body any) {
	w.Header().Set("content-type", "application/json")
	_ = json.NewEncoder(w).Encode(body)
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "stub-plugin: "+format+"\n", args...)
	os.Exit(1)
}
