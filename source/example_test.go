package source_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source"
)

// Publish a directory as a ResourceSync Source: Open ties the directory to
// its state, Update scans and publishes, Handler serves the documents and
// the resources. A client starts at /.well-known/resourcesync and follows
// the documents down to the resources. (Run keeps it up to date: at an
// interval, or on filesystem events with RunOptions.Watch.)
func ExampleOpen() {
	ctx := context.Background()
	tmp, err := os.MkdirTemp("", "example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	dir := filepath.Join(tmp, "collection")
	os.MkdirAll(filepath.Join(dir, "img"), 0o755)
	os.WriteFile(filepath.Join(dir, "index.txt"), []byte("hello\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "img", "a.png"), []byte("not really a png\n"), 0o644)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	base := "http://" + ln.Addr().String() + "/"
	src, err := source.Open(source.Config{
		BaseURL:  base,
		Sets:     []source.SetConfig{{Name: "default", Dir: dir}},
		StateDir: filepath.Join(tmp, "state"), // inventory, change journal, documents
		Logger:   slog.New(slog.DiscardHandler),
	})
	if err != nil {
		log.Fatal(err)
	}
	defer src.Close()
	if _, err := src.Update(ctx); err != nil {
		log.Fatal(err)
	}
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: src.Handler(nil)}}
	srv.Start()
	defer srv.Close()

	// get prints a document's capability and its entries (URLs relative
	// to the base) and returns the entries.
	get := func(url string) []rs.Entry {
		resp, err := http.Get(url)
		if err != nil {
			log.Fatal(err)
		}
		defer resp.Body.Close()
		d := rs.NewDecoder(resp.Body)
		h, err := d.Head()
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s (%s)\n", strings.TrimPrefix(url, base), h.Capability())
		var entries []rs.Entry
		for e, err := range d.All() {
			if err != nil {
				log.Fatal(err)
			}
			fmt.Printf("  %s", strings.TrimPrefix(e.Loc, base))
			if e.MD.HasLength {
				fmt.Printf(" %d bytes", e.MD.Length)
			}
			fmt.Println()
			entries = append(entries, *e)
		}
		return entries
	}
	capLists := get(base + ".well-known/resourcesync")
	for _, e := range get(capLists[0].Loc) {
		if strings.HasSuffix(e.Loc, "/resourcelist.xml") {
			get(e.Loc)
		}
	}
	resp, err := http.Get(base + "index.txt")
	if err != nil {
		log.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Printf("index.txt: %s", b)
	// Output:
	// .well-known/resourcesync (description)
	//   .resourcesync/default/capabilitylist.xml
	// .resourcesync/default/capabilitylist.xml (capabilitylist)
	//   .resourcesync/default/resourcelist.xml
	//   .resourcesync/default/changelist.xml
	// .resourcesync/default/resourcelist.xml (resourcelist)
	//   img/a.png 17 bytes
	//   index.txt 6 bytes
	// index.txt: hello
}
