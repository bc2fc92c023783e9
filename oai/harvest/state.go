package harvest

import (
	"encoding/json"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/resourcesync-go/resourcesync/internal/boltdb"
)

// The harvest state: bucket "state" holds the last completed harvest
// ("last") and the harvest under way ("run"); bucket "seen" the record
// paths a running full ListIdentifiers pass has listed (on disk, so that
// memory does not grow with the repository).
var (
	bState = []byte("state")
	bSeen  = []byte("seen")
	kLast  = []byte("last")
	kRun   = []byte("run")
)

// last is the last completed harvest.
type last struct {
	Start       time.Time // repository time (Identify's responseDate) at its start
	End         time.Time // local time
	FullAt      time.Time // start of the last full listing (first harvest or pass)
	FullMissed  int       // Stats.Missed of that listing
	Stats       Stats
	Granularity string
}

// run is a harvest under way: its lists and how far each got. A list's
// Token is that of the next page to ask for; "" with Pages 0 (or after a
// bad token) means from the start, with From.
type run struct {
	Start time.Time
	Full  bool // first harvest: no from
	Pass  bool // the lists include a full pass (ListRecords, or ListIdentifiers in a state of an older version)
	// Missed and Listed count, over the full pass's pages committed,
	// the changes it found that the incremental lists had missed, and
	// the records (or headers) it listed.
	Missed int   `json:",omitempty"`
	Listed int64 `json:",omitempty"`
	Lists  []list
	// Pending are the paths of the last page, saved with the page's
	// place before Committed is called with them: a harvest resumed
	// after Committed failed (or the process died) reports them again
	// before going on.
	Pending []string `json:",omitempty"`
}

type list struct {
	Verb, Prefix, Set, From string
	Token                   string
	Pages                   int
	Done                    bool
	Pass                    bool `json:",omitempty"` // a list of the full pass: ListRecords without from
}

func getJSON(tx *bbolt.Tx, k []byte, v any) (bool, error) {
	b := tx.Bucket(bState).Get(k)
	if b == nil {
		return false, nil
	}
	return true, json.Unmarshal(b, v)
}

func putJSON(tx *bbolt.Tx, k []byte, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return tx.Bucket(bState).Put(k, b)
}

func openState(path string) (*bbolt.DB, error) {
	db, err := boltdb.Open(path, &bbolt.Options{Timeout: time.Second, FreelistType: bbolt.FreelistMapType})
	if err != nil {
		return nil, err
	}
	err = boltdb.Run(db, true, func(tx *bbolt.Tx) error {
		for _, b := range [][]byte{bState, bSeen} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}
