package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"go.etcd.io/bbolt"

	"github.com/resourcesync-go/resourcesync/internal/boltdb"
)

// StateFile is the name of the client's state file in its state directory.
const StateFile = "sdshare-client.state"

// Errors of the state file; match with errors.Is.
var (
	ErrStateLocked  = errors.New("sdshare client: state file is in use by another process")
	ErrStateCorrupt = errors.New("sdshare client: state file is corrupt")
)

var bCollections = []byte("collections")

// CollectionState is what the client keeps about one collection between
// runs (SD-CLI-1): its t, and what it needs to tell whether t still
// applies (the graph it wrote to, the feeds it found).
type CollectionState struct {
	Title          string `json:"title,omitempty"`
	CollectionFeed string `json:"collectionFeed"`
	SnapshotsFeed  string `json:"snapshotsFeed,omitempty"`
	FragmentsFeed  string `json:"fragmentsFeed,omitempty"`
	Graph          string `json:"graph"`
	// T is the time of the last update seen; zero means unset (a snapshot
	// is due).
	T time.Time `json:"t,omitzero"`
	// Snapshot is the updated instant of the snapshot loaded last (zero if
	// none was: the collection offered none).
	Snapshot time.Time `json:"snapshot,omitzero"`
	// Synced is when a run last finished this collection without failures.
	Synced time.Time `json:"synced,omitzero"`
}

// State is the client's durable state: one record per collection, keyed by
// the collection feed's URL. Every Put is one fsynced bbolt transaction, so
// after a kill -9 a record is as before or as after the Put. The file is
// locked while open: two clients cannot share a state directory.
type State struct {
	db *bbolt.DB
}

// OpenState opens or creates the state file in dir (created if missing).
func OpenState(dir string) (*State, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("sdshare client: state directory: %w", err)
	}
	path := filepath.Join(dir, StateFile)
	db, err := openBolt(path)
	if err != nil {
		return nil, err
	}
	if err := db.Update(func(tx *bbolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(bCollections)
		return err
	}); err != nil {
		db.Close()
		return nil, fmt.Errorf("sdshare client: state %s: %w", path, err)
	}
	return &State{db: db}, nil
}

func openBolt(path string) (*bbolt.DB, error) {
	db, err := boltdb.Open(path, &bbolt.Options{Timeout: time.Second})
	switch {
	case err == nil:
		return db, nil
	case errors.Is(err, boltdb.ErrLocked):
		return nil, fmt.Errorf("%w: %s", ErrStateLocked, path)
	case errors.Is(err, boltdb.ErrCorrupt):
		return nil, fmt.Errorf("%w: %s: %w", ErrStateCorrupt, path, err)
	}
	return nil, fmt.Errorf("sdshare client: state %s: %w", path, err)
}

// Get returns the record of the collection whose feed is at key.
func (s *State) Get(key string) (CollectionState, bool, error) {
	var cs CollectionState
	var found bool
	err := s.db.View(func(tx *bbolt.Tx) error {
		v := tx.Bucket(bCollections).Get([]byte(key))
		if v == nil {
			return nil
		}
		found = true
		if err := json.Unmarshal(v, &cs); err != nil {
			return fmt.Errorf("%w: record %q: %w", ErrStateCorrupt, key, err)
		}
		return nil
	})
	return cs, found, err
}

// Put stores the record of the collection whose feed is at key, durably.
func (s *State) Put(key string, cs CollectionState) error {
	v, err := json.Marshal(cs)
	if err != nil {
		return err
	}
	err = s.db.Update(func(tx *bbolt.Tx) error {
		return tx.Bucket(bCollections).Put([]byte(key), v)
	})
	if err != nil {
		return fmt.Errorf("sdshare client: writing state: %w", err)
	}
	return nil
}

// All returns every record, keyed by collection feed URL.
func (s *State) All() (map[string]CollectionState, error) {
	out := map[string]CollectionState{}
	err := s.db.View(func(tx *bbolt.Tx) error {
		return tx.Bucket(bCollections).ForEach(func(k, v []byte) error {
			var cs CollectionState
			if err := json.Unmarshal(v, &cs); err != nil {
				return fmt.Errorf("%w: record %q: %w", ErrStateCorrupt, k, err)
			}
			out[string(k)] = cs
			return nil
		})
	})
	return out, err
}

// Close closes the state file; idempotent.
func (s *State) Close() error {
	if s == nil || s.db == nil {
		return nil
	}
	err := s.db.Close()
	s.db = nil
	return err
}
