package aggregate

import (
	"context"
	"errors"
	"net/http"

	"github.com/resourcesync-go/resourcesync/destination"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore"
)

// syncSDShare is the rdf helper's (aggregate/sdshare.go); this stand-in
// is removed at the merge.
func syncSDShare(ctx context.Context, src Source, dest string, store graphstore.Store, hc *http.Client, emit func(destination.Event)) result {
	return result{Mode: "sdshare", Err: errors.New("not yet"), Reason: ReasonConfig}
}
