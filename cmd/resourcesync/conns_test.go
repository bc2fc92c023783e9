package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/httpserver"
	"github.com/resourcesync-go/resourcesync/source"
)

// TestServeSlowDumpDownload: serve's handler under the servers' policy,
// with a write stall of 150 ms: a client reading a dump ZIP slowly but
// steadily, for many times the stall, gets the whole ZIP.
func TestServeSlowDumpDownload(t *testing.T) {
	dir := t.TempDir()
	coll := filepath.Join(dir, "coll")
	os.MkdirAll(coll, 0o755)
	for i := range 4 {
		b := make([]byte, 2<<20) // incompressible: the ZIP is as large
		rand.Read(b)
		os.WriteFile(filepath.Join(coll, fmt.Sprintf("f%d.bin", i)), b, 0o644)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String() + "/"
	src, err := source.Open(source.Config{BaseURL: base, Sets: []source.SetConfig{{Name: "s", Dir: coll}},
		StateDir: filepath.Join(dir, "state"), ChangeListPeriod: time.Hour, Dumps: true, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if _, err := src.Update(context.Background()); err != nil {
		t.Fatal(err)
	}
	const stall = 150 * time.Millisecond
	srv := httpserver.New(src.Handler(nil), httpserver.Options{WriteStall: stall})
	go srv.Serve(ln)
	defer srv.Close()
	resp, err := http.Get(base + ".resourcesync/s/resourcedump.xml")
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := regexp.MustCompile(`<loc>(http[^<]*\.zip)</loc>`).FindSubmatch(doc)
	if m == nil {
		t.Fatalf("no ZIP in the Resource Dump:\n%s", doc)
	}
	zipURL := string(m[1])
	resp, err = http.Head(zipURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	size := resp.ContentLength

	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.(*net.TCPConn).SetReadBuffer(64 << 10)
	fmt.Fprintf(nc, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", zipURL[len(base)-1:], ln.Addr())
	br := bufio.NewReader(nc)
	resp, err = http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	var got int64
	buf := make([]byte, 64<<10)
	for {
		n, err := io.ReadFull(resp.Body, buf)
		got += int64(n)
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			t.Fatalf("after %d of %d bytes: %v", got, size, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	took := time.Since(t0)
	if got != size || size < 8<<20 {
		t.Fatalf("dump ZIP: %d bytes received, want %d (>= 8 MiB)", got, size)
	}
	if took < 3*stall {
		t.Fatalf("the download took %v: not long enough to test a write stall of %v", took, stall)
	}
	t.Logf("dump ZIP of %d bytes read slowly in %v (write stall %v)", size, took.Round(time.Millisecond), stall)
}
