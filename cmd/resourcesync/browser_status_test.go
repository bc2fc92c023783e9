package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/browsertest"
)

// TestBrowserStatus: the Source status page of a real serve (embedded hub,
// its admin on)
// in headless Chromium: its figures match the Source's state (resources,
// total size, the subscriber a real sync --follow made, the newest journal
// record after a change), both charts are there with 24 and 30 bars, the
// Capability List link works by clicking, nothing is loaded from another
// origin; screenshots status and status-phone.
func TestBrowserStatus(t *testing.T) {
	b := browsertest.New(t)
	syncLoopbackOnly(t)
	dir := t.TempDir()
	var total int64
	for i := range 12 {
		body := strings.Repeat(fmt.Sprintf("resource %d\n", i), 10*(i+1))
		total += int64(len(body))
		os.MkdirAll(filepath.Join(dir, fmt.Sprintf("shelf%d", i%3)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("shelf%d", i%3), fmt.Sprintf("book %d.txt", i)), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	addr := freeAddr(t)
	origin := "http://" + addr
	base := origin + "/"
	sout, _ := background(t, "serve", "--addr", addr, "--watch", "--rescan-interval", "0", "--allow-private-callbacks", "--hub-admin-token", "adm", "--state", t.TempDir(), dir)
	waitFor(t, "the Source", 15*time.Second, func() bool { return strings.Contains(sout.String(), "change notifications") })
	if !strings.Contains(sout.String(), "status page: "+base+".resourcesync/") {
		t.Errorf("serve does not name the status page:\n%s", sout)
	}

	// A real subscription.
	listen := freeAddr(t)
	dest := t.TempDir()
	fout, _ := background(t, "sync", "--follow", "--listen", listen, "--poll-interval", "1h", base, dest)
	waitFor(t, "the subscription", 20*time.Second, func() bool { return strings.Contains(fout.String(), "subscribed to") })

	// A change, journaled.
	changed := "shelf1/new arrival.txt"
	body := "just arrived\n"
	total += int64(len(body))
	if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(changed)), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}

	waitFor(t, "the change delivered to the subscriber", 20*time.Second, func() bool {
		b, _ := os.ReadFile(filepath.Join(dest, filepath.FromSlash(changed)))
		return string(b) == body
	})

	status := base + ".resourcesync/"
	figure := func(name string) string {
		v := b.Attrs(t, `#set-default [data-figure="`+name+`"]`, "data-value")
		if len(v) != 1 {
			return ""
		}
		return v[0]
	}
	hubFigure := func(name string) string {
		v := b.Attrs(t, `#notifications [data-figure="`+name+`"]`, "data-value")
		if len(v) != 1 {
			return ""
		}
		return v[0]
	}
	// The figures are reused for 5 s: reload until they show the change.
	var last string
	waitFor(t, "the status page to show the change, the subscriber and the delivery", 30*time.Second, func() bool {
		b.Navigate(t, status)
		paths := b.Texts(t, "#set-default table.newest tbody tr td.url")
		last = fmt.Sprintf("resources %s bytes %s subscriptions %s backlog %s newest %v", figure("resources"), figure("bytes"), hubFigure("subscriptions"), hubFigure("backlog"), paths)
		// backlog 0: the change was delivered to the subscriber
		return len(paths) > 0 && paths[0] == changed && figure("bytes") == strconv.FormatInt(total, 10) && hubFigure("subscriptions") == "1" && hubFigure("backlog") == "0"
	})
	t.Log(last)
	if got := figure("resources"); got != "13" {
		t.Errorf("resources %s, want 13", got)
	}
	if got := b.Text(t, "#set-default table.newest tbody tr td .tag"); got != "created" {
		t.Errorf("newest change %q", got)
	}
	if got := b.Attrs(t, "#set-default table.newest tbody tr td.url a", "href")[0]; got != base+"shelf1/new%20arrival.txt" {
		t.Errorf("newest record's link %s", got)
	}
	// The subscriber: its callback's host, with a count.
	rows := b.Texts(t, "#notifications table.subscribers tbody tr")
	if len(rows) != 1 || !strings.Contains(rows[0], listen) || !strings.Contains(rows[0], "default") {
		t.Errorf("subscribers %q (callback host %s)", rows, listen)
	}
	// Charts: 24 hourly bars, 30 daily, the change counted in the last.
	if n := browsertest.Eval[int](t, b, `document.querySelectorAll("#set-default figure.hourly svg rect.bar").length`); n != 24 {
		t.Errorf("%d hourly bars", n)
	}
	if n := browsertest.Eval[int](t, b, `document.querySelectorAll("#set-default figure.daily svg rect.bar").length`); n != 30 {
		t.Errorf("%d daily bars", n)
	}
	if h := browsertest.Eval[float64](t, b, `document.querySelector("#set-default figure.hourly svg rect.bar:last-of-type").getBBox().height`); h <= 0 {
		t.Errorf("the current hour's bar is empty")
	}
	if got := figure("last24h"); got == "" || got == "0" {
		t.Errorf("changes in 24 h: %q", got)
	}
	// Links: metrics, Source Description; the Capability List by clicking.
	if m := b.Attrs(t, `footer a[href$="/.resourcesync/metrics"]`, "href"); len(m) != 1 {
		t.Errorf("no metrics link: %v", m)
	}
	b.Screenshot(t, "status")
	b.Phone(t)
	b.Navigate(t, status)
	b.Screenshot(t, "status-phone")
	if w := browsertest.Eval[int](t, b, `document.documentElement.scrollWidth`); w > 400 {
		t.Errorf("the page is %d px wide on a phone", w)
	}
	b.Desktop(t)
	b.Click(t, "#set-default a.caplist")
	if loc := b.Location(t); loc != base+".resourcesync/default/capabilitylist.xml" {
		t.Errorf("clicked the Capability List, at %s", loc)
	}
	if src := browsertest.Eval[string](t, b, `document.documentElement.outerHTML`); !strings.Contains(src, "resourcelist.xml") {
		t.Errorf("the Capability List does not show its capabilities")
	}
	b.AssertSameOrigin(t, origin)
}
