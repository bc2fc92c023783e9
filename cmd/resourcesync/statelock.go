package main

import (
	"errors"

	"github.com/resourcesync-go/resourcesync/source/store"
)

// lockedHint is what to do, added to the message of an error opening a
// Source's state that another process holds (the store's error names
// that process where it can be known): serve and publish on one DIR share
// DIR/.resourcesync, and only one of them can have it.
func lockedHint(err error) string {
	if !errors.Is(err, store.ErrLocked) {
		return ""
	}
	return "\ngive this command --state elsewhere (a state directory of its own), or stop the other one"
}
