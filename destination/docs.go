package destination

import (
	"context"

	"github.com/resourcesync-go/resourcesync/destination/discover"
)

type (
	doc     = discover.Doc
	setInfo = discover.Set
)

// open downloads a document (retried, spooled, size-capped) and reads its head.
func (e *engine) open(ctx context.Context, u string) (*doc, error) {
	return e.g.Open(ctx, u)
}

func (e *engine) discover(ctx context.Context, source string) (string, []setInfo, error) {
	res, err := discover.Discover(ctx, e.g, source)
	if err != nil {
		return "", nil, err
	}
	return res.Base, res.Sets, nil
}
