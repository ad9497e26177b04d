// Command kubelet is the upstream kubelet, linked from k8s.io/kubernetes at the
// version pinned in go.mod (mirrors upstream's cmd/kubelet/kubelet.go). The test
// node (test/support/node.ts) runs it against containerd.
package main

import (
	"context"
	"os"
	_ "time/tzdata"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kubelet/app"
	"skein.dev/testcluster/internal/lifeline"
)

func main() {
	lifeline.Watch()
	// A nil context panics inside the command: upstream passes Background too.
	os.Exit(cli.Run(app.NewKubeletCommand(context.Background())))
}
