// Command kube-scheduler is the upstream kube-scheduler, linked from k8s.io/kubernetes
// at the version pinned in go.mod (mirrors upstream's cmd/kube-scheduler/scheduler.go).
// The test node runs it so Deployments' pods are bound to the node as in a real cluster.
package main

import (
	"os"
	_ "time/tzdata"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	"skein.dev/testcluster/internal/lifeline"
)

func main() {
	lifeline.Watch()
	os.Exit(cli.Run(app.NewSchedulerCommand()))
}
