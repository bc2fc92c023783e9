//go:build unix

package aggregate

import (
	"os"
	"os/signal"
	"syscall"
	"testing"
)

// TestNotifyReload: a SIGHUP reaches the channel (and does not end the
// process).
func TestNotifyReload(t *testing.T) {
	c := make(chan os.Signal, 1)
	NotifyReload(c)
	defer signal.Stop(c)
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	if s := <-c; s != syscall.SIGHUP {
		t.Fatalf("got %v, want SIGHUP", s)
	}
}
