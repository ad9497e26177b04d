// Command kube-controller-manager is the upstream kube-controller-manager, linked from
// k8s.io/kubernetes at the version pinned in go.mod (mirrors upstream's main).
package main

import (
	"os"
	_ "time/tzdata"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app"
	"skein.dev/testcluster/internal/lifeline"
)

func main() {
	lifeline.Watch()
	os.Exit(cli.Run(app.NewControllerManagerCommand()))
}
