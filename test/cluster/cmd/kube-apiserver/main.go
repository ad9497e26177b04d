// Command kube-apiserver is the upstream kube-apiserver, linked from k8s.io/kubernetes
// at the version pinned in go.mod. It mirrors upstream's cmd/kube-apiserver/apiserver.go
// so the binary behaves exactly like a release build.
package main

import (
	"os"
	_ "time/tzdata"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
	"skein.dev/testcluster/internal/lifeline"
)

func main() {
	// NewAPIServerCommand installs a signal handler that panics if set up twice in
	// one process, so every component runs as its own process.
	lifeline.Watch()
	os.Exit(cli.Run(app.NewAPIServerCommand()))
}
