package discover_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"time"

	"github.com/resourcesync-go/resourcesync/destination/discover"
)

// Discover a Source from its base URL, then read each set's Resource List.
func ExampleDiscover() {
	ctx := context.Background()
	g := &discover.Getter{Client: &http.Client{Timeout: time.Minute}}
	res, err := discover.Discover(ctx, g, "https://example.org/")
	if err != nil {
		log.Fatal(err) // errors.Is(err, discover.ErrNotFound) when nothing was found
	}
	for _, set := range res.Sets {
		if set.ResourceList == "" {
			continue
		}
		doc, err := g.Open(ctx, set.ResourceList)
		if err != nil {
			log.Fatal(err)
		}
		n := 0
		for {
			_, err := doc.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				log.Fatal(err)
			}
			n++
		}
		doc.Close()
		kind := "list"
		if doc.Head.IsIndex() {
			kind = "index of lists"
		}
		fmt.Printf("%s: resource %s with %d entries\n", set.Name, kind, n)
	}
}
