package publish

import (
	"context"
	"fmt"
	"io"

	"github.com/resourcesync-go/resourcesync/source/store"
)

// openContent opens r's bytes in s.Content (a Set whose collection is not
// a local directory). An object whose size is no longer the scanned one
// fails with errChanged, as a changed file does; its bytes are checked
// against the inventory's sha-256 by the caller, as a file's are.
func openContent(ctx context.Context, s *Set, r *store.Resource) (io.ReadCloser, error) {
	rc, inf, err := s.Content.Open(ctx, r.Path, 0, -1)
	if err != nil {
		return nil, fmt.Errorf("%s: %w (%w)", r.Path, errChanged, err)
	}
	if inf.Size != r.Size {
		rc.Close()
		return nil, fmt.Errorf("%s: %w", r.Path, errChanged)
	}
	return rc, nil
}

// readContentInto reads r's object into b (len(b) is r.Size+1, so an
// object that grew is seen), as readFileInto reads a file.
func readContentInto(ctx context.Context, s *Set, r *store.Resource, b []byte) (int, bool) {
	rc, err := openContent(ctx, s, r)
	if err != nil {
		return 0, false
	}
	defer rc.Close()
	n, err := io.ReadFull(rc, b)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return n, false
	}
	return n, true
}
