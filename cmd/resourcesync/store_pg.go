package main

import (
	"context"

	"github.com/resourcesync-go/resourcesync/source/store"
	"github.com/resourcesync-go/resourcesync/source/store/pgstore"
)

// openPostgres opens a set's state in the PostgreSQL database at url.
func openPostgres(ctx context.Context, url, set string) (store.Store, error) {
	st, err := pgstore.Open(ctx, url, set, nil)
	if err != nil {
		return nil, err
	}
	return st, nil
}
