package oaisource_test

import (
	"context"
	"log"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/resourcesync-go/resourcesync/oai/harvest"
	"github.com/resourcesync-go/resourcesync/oai/oaisource"
	"github.com/resourcesync-go/resourcesync/source"
	"github.com/resourcesync-go/resourcesync/source/status"
)

// A Source publishing the oai_dc records of a repository, harvested every
// ten minutes, as resourcesync serve --oai-pmh does (serving src's
// Handler is left out).
func Example() {
	ctx := context.Background()
	root := "/var/lib/rs"
	records := filepath.Join(root, "records")
	if err := os.MkdirAll(records, 0o755); err != nil {
		log.Fatal(err)
	}
	logger := slog.Default()
	repo, err := oaisource.New(oaisource.Config{
		Harvest: harvest.Config{
			Endpoint: "https://repo.example.org/oai",
			Prefixes: []string{"oai_dc"},
			Dir:      records,
			State:    filepath.Join(root, "state", "oai-pmh"),
		},
		Logger:       logger,
		PublishEvery: 5 * time.Second,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer repo.Close()
	if repo.Empty() {
		// The first harvest is the Source's baseline, scanned below.
		repo.Harvest(ctx, nil)
	}
	src, err := source.Open(source.Config{
		BaseURL:        "https://data.example.org/",
		StateDir:       filepath.Join(root, "state"),
		Sets:           []source.SetConfig{{Name: "default", Dir: records}},
		Logger:         logger,
		StatusSections: func() []status.Section { return []status.Section{repo.Section()} },
	})
	if err != nil {
		log.Fatal(err)
	}
	defer src.Close()
	if _, err := src.Update(ctx); err != nil {
		log.Fatal(err)
	}
	repo.Run(ctx, src, 10*time.Minute, 0)
}
