// Command kube-proxy is the upstream kube-proxy, linked from k8s.io/kubernetes at
// the version pinned in go.mod (mirrors upstream's cmd/kube-proxy/proxy.go). The
// test node runs it so pods reach ClusterIP Services, the API server's own included.
package main

import (
	"os"
	_ "time/tzdata"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-proxy/app"
	"skein.dev/testcluster/internal/lifeline"
)

func main() {
	lifeline.Watch()
	os.Exit(cli.Run(app.NewProxyCommand()))
}
