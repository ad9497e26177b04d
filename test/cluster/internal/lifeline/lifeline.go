// Package lifeline ties a test-cluster component to the process that started it.
//
// When TESTCLUSTER_LIFELINE=stdin, the component treats its stdin as a lifeline:
// the launcher never writes to it, so EOF means the launcher is gone (even after
// SIGKILL, which no exit handler sees). The component then gets SIGTERM, so it
// shuts down through its own signal handler, and is forced out if that hangs.
// Without the variable nothing happens, so the binaries also run by hand.
package lifeline

import (
	"io"
	"os"
	"syscall"
	"time"
)

// Watch starts watching stdin in the background if the environment asks for it.
func Watch() {
	if os.Getenv("TESTCLUSTER_LIFELINE") != "stdin" {
		return
	}
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		_ = syscall.Kill(os.Getpid(), syscall.SIGTERM)
		time.Sleep(15 * time.Second)
		os.Exit(1)
	}()
}
