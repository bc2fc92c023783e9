package web

import (
	"net/http"
	"runtime"
	"time"
)

// Slots bound the HTML views rendered at once in a process to half the
// cores: a view decodes a whole document or feed page (a 50,000-entry
// list: ~60 ms of CPU, against a few ms to send the XML), so a flood of
// browser requests (16 at once) made the XML wait 75 times longer; the
// machine clients keep the other half. One policy for every server that
// renders views (source/server, sdshare/server).
var Slots = make(chan struct{}, max(1, runtime.GOMAXPROCS(0)/2))

// SlotWait is how long a view waits for a slot before Busy answers 503.
var SlotWait = 3 * time.Second

// Acquire takes a slot, waiting at most SlotWait (or until the request
// ends). On success release must be called when the view is written; on
// failure Acquire has answered 503 with Retry-After.
func Acquire(w http.ResponseWriter, r *http.Request) (release func(), ok bool) {
	release = func() { <-Slots }
	select {
	case Slots <- struct{}{}:
		return release, true
	default:
	}
	t := time.NewTimer(SlotWait)
	defer t.Stop()
	select {
	case Slots <- struct{}{}:
		return release, true
	case <-t.C:
	case <-r.Context().Done():
	}
	h := w.Header()
	h.Del("Last-Modified")
	h.Set("Retry-After", "2")
	http.Error(w, "busy rendering other HTML views: retry in a moment (the XML is served as ever)", http.StatusServiceUnavailable)
	return nil, false
}
