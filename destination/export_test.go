package destination

import (
	"time"

	bolt "go.etcd.io/bbolt"
)

// SetTestAfterInstall sets the hook run after a file is renamed into place
// and before its record is queued (nil removes it).
func SetTestAfterInstall(f func(rel string)) { testAfterInstall = f }

// SyncedStateCommits counts the state commits this process synced.
func SyncedStateCommits() int64 { return syncedCommits.Load() }

// PendingIntents counts the intents DEST's state holds.
func PendingIntents(dest string) (n int, err error) {
	st, err := openState(dest, true)
	if err != nil {
		return 0, err
	}
	defer st.Close()
	err = st.view(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucketIntent); b != nil {
			n = b.Stats().KeyN
		}
		return nil
	})
	return n, err
}

// ProbeMTimeGranularity is the probe Open runs in DEST's temporary
// directory when Options.MTimeGranularity is nil.
func ProbeMTimeGranularity(dir string) (time.Duration, error) { return probeMTimeGrain(dir) }

// LeaveTestIntent leaves DEST's state as a run killed after it committed
// the intent to install uri at rel, and before it installed it.
func LeaveTestIntent(dest, rel, uri, set string) error {
	st, err := openState(dest, false)
	if err != nil {
		return err
	}
	defer st.Close()
	in := intent{uri: uri, set: set}
	if err := st.putIntents([]string{rel}, [][]byte{encodeIntent(&in)}); err != nil {
		return err
	}
	return st.putMeta("running", runMarkIntents+time.Now().UTC().Format(time.RFC3339))
}
