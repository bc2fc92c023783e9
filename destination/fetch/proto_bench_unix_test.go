//go:build unix

package fetch

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/rs"
)

// BenchmarkProtocols fetches 1 KiB resources from a server on loopback
// with 8 concurrent Fetches, over HTTP/1.1 with keep-alive and over
// HTTP/2 cleartext (h2c, prior knowledge), and reports the CPU time of
// this process (client and server) per resource as cpu-µs/op. It is why
// our own Source and Destination speak HTTP/1.1 to each other: on Go's
// stacks h2c costs more CPU per small resource (its server runs every
// request on a goroutine of its own and funnels frames through one
// writer), and loopback has no round trips for multiplexing to save.
func BenchmarkProtocols(b *testing.B) {
	for _, h2c := range []bool{false, true} {
		name := "http1.1"
		if h2c {
			name = "h2c"
		}
		b.Run(name, func(b *testing.B) { benchProtocol(b, h2c) })
	}
}

func benchProtocol(b *testing.B, h2c bool) {
	body := bytes.Repeat([]byte("x"), 1024)
	sum := sha256.Sum256(body)
	hs := rs.Hashes{{Alg: rs.SHA256, Value: hex.EncodeToString(sum[:])}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1024")
		w.Write(body)
	})}
	var sp http.Protocols
	sp.SetHTTP1(true)
	sp.SetUnencryptedHTTP2(true)
	srv.Protocols = &sp
	go srv.Serve(ln)
	defer srv.Close()
	tr := &http.Transport{MaxIdleConnsPerHost: 16}
	if h2c {
		var cp http.Protocols
		cp.SetUnencryptedHTTP2(true)
		tr.Protocols = &cp
	}
	defer tr.CloseIdleConnections()
	var proto atomic.Value
	f := &Fetcher{Client: &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		resp, err := tr.RoundTrip(r)
		if err == nil {
			proto.Store(resp.Proto)
		}
		return resp, err
	})}}
	d, err := OpenDir(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	url := "http://" + ln.Addr().String() + "/r"
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	cpu0 := cpuTime()
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
				_, err := f.Fetch(context.Background(), Request{URLs: []string{url}, Length: 1024, HasLength: true, Hashes: hs,
					Path: filepath.Join(d.Path(), fmt.Sprint(i)), Dir: d, NoSync: true})
				if err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
	if want := map[bool]string{false: "HTTP/1.1", true: "HTTP/2.0"}[h2c]; proto.Load() != want {
		b.Fatalf("spoke %v, want %s", proto.Load(), want)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
