// Command etcd is a single-member etcd for tests: the embedded server from
// go.etcd.io/etcd/server/v3 at the version k8s.io/apiserver requires (go.mod keeps
// them in step), on loopback only, without fsync.
//
// Once the server serves clients it prints one JSON line on stdout:
//
//	{"msg":"ready","clientURL":"http://127.0.0.1:PORT"}
//
// Port 0 lets the kernel choose; pass the reported port back to restart on the
// same address (kube-apiserver's --etcd-servers cannot change).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"

	"skein.dev/testcluster/internal/lifeline"
)

func main() {
	dataDir := flag.String("data-dir", "", "etcd data directory (required)")
	clientPort := flag.Int("client-port", 0, "client port on 127.0.0.1 (0: any free port)")
	peerPort := flag.Int("peer-port", 0, "peer port on 127.0.0.1 (0: any free port; a single member never dials it)")
	logLevel := flag.String("log-level", "warn", "etcd log level (debug, info, warn, error)")
	flag.Parse()
	lifeline.Watch()
	if *dataDir == "" {
		fmt.Fprintln(os.Stderr, "etcd: --data-dir is required")
		os.Exit(2)
	}
	if err := run(*dataDir, *clientPort, *peerPort, *logLevel); err != nil {
		fmt.Fprintln(os.Stderr, "etcd:", err)
		os.Exit(1)
	}
}

func loopback(port int) url.URL {
	return url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", port)}
}

func run(dataDir string, clientPort, peerPort int, logLevel string) error {
	cfg := embed.NewConfig()
	cfg.Name = "test"
	cfg.Dir = dataDir
	cfg.ListenClientUrls = []url.URL{loopback(clientPort)}
	cfg.AdvertiseClientUrls = cfg.ListenClientUrls
	cfg.ListenPeerUrls = []url.URL{loopback(peerPort)}
	cfg.AdvertisePeerUrls = cfg.ListenPeerUrls
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	// Test data is disposable: skipping fsync makes every write (and the suite) much faster.
	cfg.UnsafeNoFsync = true
	cfg.Logger = "zap"
	cfg.LogLevel = logLevel
	cfg.LogOutputs = []string{"stderr"}

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return err
	}

	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return err
	case <-time.After(60 * time.Second):
		e.Close()
		return fmt.Errorf("not ready within 60s")
	}
	ready, err := json.Marshal(map[string]string{
		"msg":       "ready",
		"clientURL": "http://" + e.Clients[0].Addr().String(),
	})
	if err != nil {
		return err
	}
	fmt.Println(string(ready))

	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	select {
	case <-signals:
		// Stop raft and close the backend, then exit without Close(): its graceful
		// gRPC stop waits seconds for the API server's watch streams to end.
		e.Server.HardStop()
		return nil
	case err := <-e.Err():
		e.Close()
		return err
	}
}
