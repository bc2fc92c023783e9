package destination_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"time"

	"github.com/resourcesync-go/resourcesync/destination"
	"github.com/resourcesync-go/resourcesync/source"
)

// Mirror a Source into a directory: the first run is a baseline from the
// Resource List, later runs apply the Change Lists written since. The
// Source here is our own, serving a temporary directory on 127.0.0.1.
func ExampleSync() {
	ctx := context.Background()
	tmp, err := os.MkdirTemp("", "example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	collection := filepath.Join(tmp, "collection")
	os.MkdirAll(filepath.Join(collection, "docs"), 0o755)
	os.WriteFile(filepath.Join(collection, "a.txt"), []byte("first\n"), 0o644)
	os.WriteFile(filepath.Join(collection, "docs", "b.txt"), []byte("second\n"), 0o644)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	base := "http://" + ln.Addr().String() + "/"
	src, err := source.Open(source.Config{BaseURL: base, StateDir: filepath.Join(tmp, "state"),
		Sets: []source.SetConfig{{Name: "default", Dir: collection}}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		log.Fatal(err)
	}
	defer src.Close()
	if _, err := src.Update(ctx); err != nil { // scan and publish
		log.Fatal(err)
	}
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: src.Handler(nil)}}
	srv.Start()
	defer srv.Close()

	mirror := filepath.Join(tmp, "mirror")
	opt := destination.Options{Dest: mirror, Client: &http.Client{Timeout: time.Minute}}
	sync := func() {
		rep, err := destination.Sync(ctx, base, opt)
		if err != nil {
			log.Fatal(err) // the Source could not be read: discovery, state or lock
		}
		for _, set := range rep.Sets {
			fmt.Printf("%s: %s, %d fetched, %d deleted, %d failed, in sync: %v\n",
				set.Set, set.Mode, set.Fetched, set.Deleted, set.Failed, rep.OK(false, false))
		}
	}
	sync()
	b, _ := os.ReadFile(filepath.Join(mirror, "docs", "b.txt"))
	fmt.Printf("docs/b.txt: %s", b)

	// A change at the Source, then an incremental run.
	time.Sleep(10 * time.Millisecond) // the journal orders changes by time
	os.Remove(filepath.Join(collection, "a.txt"))
	if _, err := src.Update(ctx); err != nil {
		log.Fatal(err)
	}
	sync()
	_, err = os.Stat(filepath.Join(mirror, "a.txt"))
	fmt.Println("a.txt deleted:", os.IsNotExist(err))
	// Output:
	// default: baseline, 2 fetched, 0 deleted, 0 failed, in sync: true
	// docs/b.txt: second
	// default: incremental, 0 fetched, 1 deleted, 0 failed, in sync: true
	// a.txt deleted: true
}
