// Command incluster is a tiny static in-cluster API client for images on the real test nodes: with the
// pod's projected ServiceAccount token and CA, it asks the API server at KUBERNETES_SERVICE_HOST:PORT (what
// the kubelet injects) who it is (a SelfSubjectReview) and prints one JSON line: the user, groups and extra
// (the kubelet-issued token carries the node name). Then it sleeps, so it can run in a DaemonSet; --once exits.
package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"
)

const dir = "/var/run/secrets/kubernetes.io/serviceaccount/"

func review() (string, error) {
	token, err := os.ReadFile(dir + "token")
	if err != nil {
		return "", err
	}
	ca, err := os.ReadFile(dir + "ca.crt")
	if err != nil {
		return "", err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return "", fmt.Errorf("no certificate in %sca.crt", dir)
	}
	host, port := os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")
	if host == "" || port == "" {
		return "", fmt.Errorf("KUBERNETES_SERVICE_HOST/PORT not set")
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	body := []byte(`{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`)
	req, err := http.NewRequest("POST", "https://"+net.JoinHostPort(host, port)+"/apis/authentication.k8s.io/v1/selfsubjectreviews", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+string(bytes.TrimSpace(token)))
	req.Header.Set("Content-Type", "application/json")
	res, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusCreated && res.StatusCode != http.StatusOK {
		return "", fmt.Errorf("HTTP %d: %s", res.StatusCode, data)
	}
	var out struct {
		Status struct {
			UserInfo json.RawMessage `json:"userInfo"`
		} `json:"status"`
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return "", err
	}
	line, _ := json.Marshal(map[string]any{"server": net.JoinHostPort(host, port), "userInfo": out.Status.UserInfo})
	return string(line), nil
}

func main() {
	for attempt := 1; ; attempt++ {
		line, err := review()
		if err == nil {
			fmt.Println(line)
			break
		}
		fmt.Fprintf(os.Stderr, "attempt %d: %v\n", attempt, err)
		if attempt == 30 {
			os.Exit(1)
		}
		time.Sleep(2 * time.Second)
	}
	if len(os.Args) > 1 && os.Args[1] == "--once" {
		return
	}
	for {
		time.Sleep(time.Hour)
	}
}
