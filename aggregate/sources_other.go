//go:build !unix

package aggregate

import "os"

// NotifyReload relays to c the signal that asks to re-read the sources
// list: none here (no SIGHUP); the list is still polled.
func NotifyReload(c chan<- os.Signal) {}
