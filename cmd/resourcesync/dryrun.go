package main

import (
	"cmp"
	"fmt"
	"io"
	"strings"
	"sync"
	"unicode"

	"github.com/resourcesync-go/resourcesync/destination"
	"github.com/resourcesync-go/resourcesync/internal/units"
)

// dryRunList prints what sync --dry-run would do, one line per path on
// stdout before the summary, so that it can be read or piped:
//
//	would fetch a/b.txt (1.5 KiB)
//	would delete old.txt: not in the Resource List
//
// (--json has the same as "fetched" and "deleted" events marked "dry run".)
type dryRunList struct {
	mu sync.Mutex
	w  io.Writer
}

func (d *dryRunList) Handle(e destination.Event) {
	var line string
	set := ""
	if e.Set != "" && e.Set != "default" {
		set = "[" + printable(e.Set) + "] "
	}
	path := printable(cmp.Or(e.Path, e.URI))
	switch e.Kind {
	case destination.EventFetched:
		line = fmt.Sprintf("would fetch %s%s (%s)", set, path, units.Bytes(e.Bytes))
	case destination.EventDeleted:
		line = fmt.Sprintf("would delete %s%s: %s", set, path, printable(strings.TrimSuffix(e.Message, " (dry run)")))
	case destination.EventKept:
		line = fmt.Sprintf("would keep %s%s: %s", set, path, printable(e.Message))
	default:
		return
	}
	d.mu.Lock()
	fmt.Fprintln(d.w, line)
	d.mu.Unlock()
}

// printable replaces control characters (a hostile Source's paths could
// carry escape sequences for the terminal).
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return '?'
		}
		return r
	}, s)
}
