package main

import (
	"context"
	"errors"

	"github.com/resourcesync-go/resourcesync/source/store"
)

// postgresBuilt is false until package pgstore is merged.
const postgresBuilt = false

// openPostgres opens a set's state in the PostgreSQL database at url.
func openPostgres(ctx context.Context, url, set string) (store.Store, error) {
	return nil, errors.New("the PostgreSQL store is not in this build yet")
}
