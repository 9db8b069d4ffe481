// Command csi-registrar registers a CSI driver with the kubelet's plugin watcher, following the contract of
// kubernetes-csi's node-driver-registrar (cmd/csi-node-driver-registrar, v2), which the Go module proxy does not
// serve at any version, so it cannot be built here. This program is nodecare's own, written to that contract
// and the kubelet's registration API (k8s.io/kubelet/pkg/apis/pluginregistration/v1):
//   - it connects to the driver's socket (--csi-address, waiting until the driver serves it) and asks
//     GetPluginInfo for the driver's name (within --timeout), exiting 1 when that fails;
//   - it serves the Registration service on <--plugin-registration-path>/<driver>-reg.sock (mode 0600, a
//     stale socket removed first), where the kubelet's plugin watcher finds it;
//   - GetInfo answers {Type: CSIPlugin, Name: <driver>, Endpoint: --kubelet-registration-path,
//     SupportedVersions: ["1.0.0"]}; NotifyRegistrationStatus with PluginRegistered false exits 1, so that
//     the kubelet restarts the container and registration is tried again;
//   - --http-endpoint serves /healthz: 200 "ok" when the registration socket exists and answers GetInfo
//     with the driver's name, 404 when the socket is gone, 500 otherwise;
//   - SIGTERM removes the registration socket and exits 0.
//
// It accepts the flags the driver-registrar containers of Kubernetes' CSI e2e manifests pass
// (test/e2e/testing-manifests/storage-csi: --v, --csi-address, --kubelet-registration-path, --http-endpoint,
// --timeout). --mode=kubelet-registration-probe is not implemented.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	"k8s.io/klog/v2"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

var supportedVersions = []string{"1.0.0"}

type registration struct {
	registerapi.UnimplementedRegistrationServer
	driver   string
	endpoint string
}

func (r registration) GetInfo(_ context.Context, req *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	klog.InfoS("Received GetInfo call", "request", req.String())
	return &registerapi.PluginInfo{
		Type:              registerapi.CSIPlugin,
		Name:              r.driver,
		Endpoint:          r.endpoint,
		SupportedVersions: supportedVersions,
	}, nil
}

func (r registration) NotifyRegistrationStatus(_ context.Context, status *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	klog.InfoS("Received NotifyRegistrationStatus call", "registered", status.PluginRegistered, "error", status.Error)
	if !status.PluginRegistered {
		klog.ErrorS(errors.New(status.Error), "Registration failed, exiting so that the container is restarted")
		klog.FlushAndExit(klog.ExitFlushTimeout, 1)
	}
	return &registerapi.RegistrationStatusResponse{}, nil
}

func main() {
	klog.InitFlags(nil)
	csiAddress := flag.String("csi-address", "/run/csi/socket", "the CSI driver's socket, as this container sees it")
	registrationDir := flag.String("plugin-registration-path", "/registration", "the kubelet's plugin registration directory, as this container sees it")
	kubeletPath := flag.String("kubelet-registration-path", "", "the CSI driver's socket on the host, for the kubelet (required)")
	httpEndpoint := flag.String("http-endpoint", "", "address of the /healthz server (empty: none)")
	timeout := flag.Duration("timeout", time.Second, "deadline of each call to the driver or the registration socket")
	mode := flag.String("mode", "registration", `only "registration"`)
	flag.Parse()
	if *kubeletPath == "" {
		fail("--kubelet-registration-path is required")
	}
	if *mode != "registration" {
		fail("--mode=%s is not implemented (only registration)", *mode)
	}

	driver, err := driverName(*csiAddress, *timeout)
	if err != nil {
		fail("the CSI driver's name from GetPluginInfo on %s: %v", *csiAddress, err)
	}
	socket := filepath.Join(*registrationDir, driver+"-reg.sock")
	if err := os.Remove(socket); err != nil && !os.IsNotExist(err) {
		fail("remove the old registration socket: %v", err)
	}
	old := syscall.Umask(0o077)
	listener, err := net.Listen("unix", socket)
	syscall.Umask(old)
	if err != nil {
		fail("listen on %s: %v", socket, err)
	}
	server := grpc.NewServer()
	registerapi.RegisterRegistrationServer(server, registration{driver: driver, endpoint: *kubeletPath})
	klog.InfoS("Serving registration", "driver", driver, "socket", socket, "endpoint", *kubeletPath)

	if *httpEndpoint != "" {
		mux := http.NewServeMux()
		mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
			code, text := healthz(socket, driver, *timeout)
			w.WriteHeader(code)
			_, _ = w.Write([]byte(text))
		})
		go func() { fail("healthz server: %v", http.ListenAndServe(*httpEndpoint, mux)) }()
	}
	go func() {
		signals := make(chan os.Signal, 1)
		signal.Notify(signals, syscall.SIGTERM)
		<-signals
		if err := os.Remove(socket); err != nil && !os.IsNotExist(err) {
			fail("remove the registration socket: %v", err)
		}
		os.Exit(0)
	}()
	if err := server.Serve(listener); err != nil {
		fail("registration server: %v", err)
	}
}

// driverName waits until the driver's socket accepts a connection (the driver container starts beside this one),
// then asks GetPluginInfo within `timeout`.
func driverName(address string, timeout time.Duration) (string, error) {
	conn, err := dial(address)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	conn.Connect()
	for state := conn.GetState(); state != connectivity.Ready; state = conn.GetState() {
		klog.InfoS("Waiting for the CSI driver's socket", "address", address, "state", state.String())
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		conn.WaitForStateChange(ctx, state)
		cancel()
		if conn.GetState() == connectivity.TransientFailure || conn.GetState() == connectivity.Idle {
			conn.Connect()
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	info, err := csi.NewIdentityClient(conn).GetPluginInfo(ctx, &csi.GetPluginInfoRequest{})
	if err != nil {
		return "", err
	}
	if info.GetName() == "" {
		return "", errors.New("GetPluginInfo returned an empty name")
	}
	return info.GetName(), nil
}

func healthz(socket, driver string, timeout time.Duration) (int, string) {
	info, err := os.Stat(socket)
	switch {
	case os.IsNotExist(err):
		return http.StatusNotFound, "registration socket does not exist"
	case err != nil:
		return http.StatusInternalServerError, err.Error()
	case info.Mode()&os.ModeSocket == 0:
		return http.StatusInternalServerError, socket + " is not a socket"
	}
	conn, err := dial(socket)
	if err != nil {
		return http.StatusInternalServerError, err.Error()
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	got, err := registerapi.NewRegistrationClient(conn).GetInfo(ctx, &registerapi.InfoRequest{})
	if err != nil {
		return http.StatusInternalServerError, fmt.Sprintf("GetInfo on the registration socket: %v", err)
	}
	if got.GetName() != driver {
		return http.StatusInternalServerError, "invalid driver name " + got.GetName()
	}
	return http.StatusOK, "ok"
}

// dial connects to a unix socket, retrying at least every 5 s while it is not there.
func dial(path string) (*grpc.ClientConn, error) {
	retry := backoff.DefaultConfig
	retry.MaxDelay = 5 * time.Second
	return grpc.NewClient("unix://"+strings.TrimPrefix(path, "unix://"),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: retry, MinConnectTimeout: 5 * time.Second}))
}

func fail(format string, args ...any) {
	klog.ErrorS(nil, "csi-registrar: "+fmt.Sprintf(format, args...))
	klog.FlushAndExit(klog.ExitFlushTimeout, 1)
}
