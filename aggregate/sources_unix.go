//go:build unix

package aggregate

import (
	"os"
	"os/signal"
	"syscall"
)

// NotifyReload relays to c the signal that asks to re-read the sources
// list (SIGHUP, as daemons re-read their configuration); stop with
// signal.Stop(c). Systems without SIGHUP (Windows) relay nothing.
func NotifyReload(c chan<- os.Signal) { signal.Notify(c, syscall.SIGHUP) }
