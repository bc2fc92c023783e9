package s3

import (
	"context"
	"net/url"

	"github.com/resourcesync-go/resourcesync/storage"
)

// The scheme's one registration: the location's query and the Options a
// command put in ctx (WithOptions) configure the bucket.
func init() {
	storage.Register("s3", storage.Opener{
		Content: func(ctx context.Context, loc string, _ *url.URL) (storage.Content, error) {
			return OpenContent(ctx, loc, optionsFrom(ctx))
		},
		Target: func(ctx context.Context, loc string, _ *url.URL) (storage.Target, error) {
			return OpenTarget(ctx, loc, optionsFrom(ctx))
		},
	})
}
