package provider

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/resourcesync-go/resourcesync/oai/harvest"
	"github.com/resourcesync-go/resourcesync/source/scan"
)

// StoreRecords serves, as a RecordCollection, a Source whose directory
// holds harvested OAI-PMH records laid out as harvest.RecordPath names
// them (PREFIX/HH/IDENTIFIER.xml): what serve --oai-pmh publishes, or a
// mirror of it. Other files are not records and are left out. Datestamps
// and deletions are those of StoreCollection (when the record's change
// was recorded here).
type StoreRecords struct {
	c *StoreCollection
}

// NewStoreRecords returns the records of one set.
func NewStoreRecords(set StoreSet) (*StoreRecords, error) {
	c, err := NewStoreCollection([]StoreSet{set})
	if err != nil {
		return nil, err
	}
	return &StoreRecords{c: c}, nil
}

// asRecord turns an item of the underlying collection into a record.
func asRecord(it Item) (Item, bool) {
	path, err := scan.UnescapePath(it.ID)
	if err != nil {
		return it, false
	}
	id, prefix, ok := harvest.ParseRecordPath(path)
	if !ok {
		return it, false
	}
	it.ID, it.Prefix = id, prefix
	return it, true
}

// Earliest implements Collection.
func (r *StoreRecords) Earliest(ctx context.Context) (time.Time, error) { return r.c.Earliest(ctx) }

// Sets implements Collection: none (a harvest keeps no set membership).
func (r *StoreRecords) Sets(context.Context) ([]Set, error) { return nil, nil }

// List implements Collection. The records of all formats are in one path
// order, so a listing of one format reads past the others' (O(records)).
func (r *StoreRecords) List(ctx context.Context, q Query, yield func(Item) bool) error {
	return r.c.List(ctx, q, func(it Item) bool {
		rec, ok := asRecord(it)
		if !ok || (q.Prefix != "" && rec.Prefix != q.Prefix) {
			return true
		}
		return yield(rec)
	})
}

// Get implements Collection; records are found with GetRecord.
func (r *StoreRecords) Get(context.Context, string) (Item, error) { return Item{}, ErrNotFound }

// GetRecord implements RecordCollection.
func (r *StoreRecords) GetRecord(ctx context.Context, identifier, prefix string) (Item, error) {
	if identifier == "" || !validPrefix(prefix) {
		return Item{}, ErrNotFound
	}
	it, err := r.c.Get(ctx, scan.EscapePath(harvest.RecordPath(identifier, prefix)))
	if err != nil {
		return Item{}, err
	}
	rec, ok := asRecord(it)
	if !ok {
		return Item{}, ErrNotFound
	}
	return rec, nil
}

// Open implements Collection.
func (r *StoreRecords) Open(ctx context.Context, it Item) (io.ReadCloser, error) {
	if it.Prefix == "" {
		return nil, errors.New("oai provider: not a record")
	}
	it.ID = scan.EscapePath(harvest.RecordPath(it.ID, it.Prefix))
	return r.c.Open(ctx, it)
}
