// Command testbin is the one program behind the real-node suite's test images (test/realnodes/images.ts):
// the workloads that stand in for a node's system extensions, run by real kubelets as pods.
//
//	testbin pause                 sleep until SIGTERM/SIGINT (a workload pod, or a pod sandbox)
//	testbin device-plugin [flags] a device plugin speaking the kubelet's device plugin API (v1beta1): serves
//	                              GetDevicePluginOptions and ListAndWatch on <dir>/<socket>, registers with
//	                              the kubelet, and re-registers when the kubelet restarts and removes the
//	                              socket (the shipped example SystemExtension's resource and socket name;
//	                              the upstream plugins' stories are in ../upstream-device-plugin.test.ts)
//	testbin ready-server [flags]  an HTTP endpoint for a kubelet readiness probe (a stand-in CNI or logging
//	                              agent): GET /healthz answers 200 or 503; POST /fail and POST /ok flip it
//	testbin csi-driver [flags]    a CSI node plugin's Identity service on <socket> (csi.v1.Identity: Probe
//	                              answers ready, GetPluginInfo names the driver), as a driver's DaemonSet pod
//	                              serves it in /var/lib/kubelet/plugins/<driver>/csi.sock
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding"
	"google.golang.org/protobuf/encoding/protowire"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: testbin pause|device-plugin|ready-server|csi-driver [flags]")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	var err error
	switch os.Args[1] {
	case "pause":
		<-ctx.Done()
	case "device-plugin":
		err = devicePlugin(ctx, os.Args[2:])
	case "ready-server":
		err = readyServer(ctx, os.Args[2:])
	case "csi-driver":
		err = csiDriver(ctx, os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "testbin:", err)
		os.Exit(1)
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s %s\n", time.Now().UTC().Format(time.RFC3339), fmt.Sprintf(format, args...))
}

// plugin serves a fixed set of healthy devices.
type plugin struct {
	pluginapi.UnimplementedDevicePluginServer
	devices []*pluginapi.Device
}

func (p *plugin) GetDevicePluginOptions(context.Context, *pluginapi.Empty) (*pluginapi.DevicePluginOptions, error) {
	return &pluginapi.DevicePluginOptions{}, nil
}

func (p *plugin) ListAndWatch(_ *pluginapi.Empty, stream grpc.ServerStreamingServer[pluginapi.ListAndWatchResponse]) error {
	if err := stream.Send(&pluginapi.ListAndWatchResponse{Devices: p.devices}); err != nil {
		return err
	}
	<-stream.Context().Done()
	return nil
}

func (p *plugin) Allocate(_ context.Context, req *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	resp := &pluginapi.AllocateResponse{}
	for _, c := range req.ContainerRequests {
		resp.ContainerResponses = append(resp.ContainerResponses, &pluginapi.ContainerAllocateResponse{
			Envs: map[string]string{"TEST_DEVICES": fmt.Sprint(c.DevicesIds)},
		})
	}
	return resp, nil
}

func (p *plugin) PreStartContainer(context.Context, *pluginapi.PreStartContainerRequest) (*pluginapi.PreStartContainerResponse, error) {
	return &pluginapi.PreStartContainerResponse{}, nil
}

func devicePlugin(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("device-plugin", flag.ContinueOnError)
	dir := fs.String("dir", pluginapi.DevicePluginPath, "the kubelet's device plugin directory")
	socket := fs.String("socket", "nvidia-gpu.sock", "socket file name inside -dir")
	resource := fs.String("resource", "nvidia.com/gpu", "extended resource name")
	count := fs.Int("devices", 1, "number of healthy devices to advertise")
	if err := fs.Parse(args); err != nil {
		return err
	}
	p := &plugin{}
	for i := range *count {
		p.devices = append(p.devices, &pluginapi.Device{ID: fmt.Sprintf("dev-%d", i), Health: pluginapi.Healthy})
	}
	path := filepath.Join(*dir, *socket)
	for ctx.Err() == nil {
		server, err := serve(path, p)
		if err != nil {
			logf("serve %s: %v; retrying", path, err)
		} else if err = register(ctx, filepath.Join(*dir, "kubelet.sock"), *socket, *resource); err != nil {
			logf("register with the kubelet: %v; retrying", err)
		} else {
			logf("registered %s with %d devices on %s", *resource, *count, path)
			// The kubelet removes every socket in its directory when it restarts: serve again and re-register.
			for ctx.Err() == nil {
				if _, statErr := os.Stat(path); statErr != nil {
					logf("socket %s gone (kubelet restarted?); registering again", path)
					break
				}
				sleep(ctx, time.Second)
			}
		}
		if server != nil {
			server.Stop()
		}
		sleep(ctx, time.Second)
	}
	_ = os.Remove(path)
	return nil
}

func serve(path string, p *plugin) (*grpc.Server, error) {
	_ = os.Remove(path)
	listener, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	server := grpc.NewServer()
	pluginapi.RegisterDevicePluginServer(server, p)
	go func() { _ = server.Serve(listener) }()
	return server, nil
}

func register(ctx context.Context, kubeletSocket, endpoint, resource string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := grpc.NewClient("unix://"+kubeletSocket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	_, err = pluginapi.NewRegistrationClient(conn).Register(ctx, &pluginapi.RegisterRequest{
		Version:      pluginapi.Version,
		Endpoint:     endpoint,
		ResourceName: resource,
	})
	return err
}

func readyServer(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("ready-server", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:9700", "address to listen on")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var failing atomic.Bool
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		if failing.Load() {
			http.Error(w, "failing", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	flip := func(to bool) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			failing.Store(to)
			logf("readiness now failing=%v", to)
			fmt.Fprintln(w, "done")
		}
	}
	mux.HandleFunc("POST /fail", flip(true))
	mux.HandleFunc("POST /ok", flip(false))
	server := &http.Server{Addr: *listen, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		<-ctx.Done()
		_ = server.Close()
	}()
	logf("ready-server listening on %s", *listen)
	if err := server.ListenAndServe(); err != nil && err != http.ErrServerClosed {
		return err
	}
	wg.Wait()
	return nil
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// rawCodec passes message bytes through: the CSI Identity answers below are written with protowire, so the
// test program needs no generated CSI code (the agent's side is the real csi.proto).
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return v.([]byte), nil }
func (rawCodec) Unmarshal(data []byte, v any) error {
	*(v.(*[]byte)) = append([]byte(nil), data...)
	return nil
}
func (rawCodec) Name() string { return "proto" }

var _ encoding.Codec = rawCodec{}

func csiDriver(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("csi-driver", flag.ContinueOnError)
	socket := fs.String("socket", "/csi/csi.sock", "unix socket to serve csi.v1.Identity on")
	name := fs.String("name", "test.csi.nodecare.io", "the driver's name (GetPluginInfo)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(*socket), 0o755); err != nil {
		return err
	}
	_ = os.Remove(*socket)
	listener, err := net.Listen("unix", *socket)
	if err != nil {
		return err
	}
	defer os.Remove(*socket)
	// ProbeResponse{ready: BoolValue{value: true}}; GetPluginInfoResponse{name, vendor_version};
	// GetPluginCapabilitiesResponse{} (no capabilities).
	ready := protowire.AppendTag(nil, 1, protowire.BytesType)
	ready = protowire.AppendBytes(ready, protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 1))
	info := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), *name)
	info = protowire.AppendString(protowire.AppendTag(info, 2, protowire.BytesType), "0.0.1")
	answers := map[string][]byte{
		"/csi.v1.Identity/Probe":                 ready,
		"/csi.v1.Identity/GetPluginInfo":         info,
		"/csi.v1.Identity/GetPluginCapabilities": {},
	}
	server := grpc.NewServer(grpc.ForceServerCodec(rawCodec{}), grpc.UnknownServiceHandler(func(_ any, stream grpc.ServerStream) error {
		method, _ := grpc.MethodFromServerStream(stream)
		var request []byte
		if err := stream.RecvMsg(&request); err != nil {
			return err
		}
		answer, ok := answers[method]
		if !ok {
			return fmt.Errorf("unimplemented: %s", method)
		}
		logf("csi-driver: %s", method)
		return stream.SendMsg(answer)
	}))
	go func() {
		<-ctx.Done()
		server.Stop()
	}()
	logf("csi-driver %s serving csi.v1.Identity on %s", *name, *socket)
	return server.Serve(listener)
}
