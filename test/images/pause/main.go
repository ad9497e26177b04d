// The pod sandbox ("pause") image's only program, for the test node's
// containerd: it holds the pod's namespaces open by sleeping until told to stop,
// and reaps the zombies it inherits as PID 1 of a shared PID namespace.
// Static (CGO_ENABLED=0) so the image needs no libc.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range signals {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
