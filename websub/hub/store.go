package hub

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	bbolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// Layout of hub.db:
//
//	log/<topic>/<seq 8 bytes BE> -> entry   (the bucket's Sequence is the head)
//	subs/<key>                    -> subRecord (JSON)
//	verif/<id 8 bytes BE>         -> job (JSON)
//	dead/<id 8 bytes BE>          -> DeadLetter (JSON)
var (
	bLog   = []byte("log")
	bSubs  = []byte("subs")
	bVerif = []byte("verif")
	bDead  = []byte("dead")
)

type store struct{ db *bbolt.DB }

func openStore(path string, noSync bool) (*store, error) {
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: 2 * time.Second, FreelistType: bbolt.FreelistMapType})
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("hub: %s is held open by another process", path)
	}
	if err != nil {
		return nil, fmt.Errorf("hub: open state: %w", err)
	}
	db.NoSync = noSync
	err = db.Update(func(tx *bbolt.Tx) error {
		for _, b := range [][]byte{bLog, bSubs, bVerif, bDead} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("hub: init state: %w", err)
	}
	return &store{db: db}, nil
}

func (s *store) close() error { return s.db.Close() }

func u64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

// entry is one notification in a topic's log.
type entry struct {
	Seq         uint64
	Published   time.Time
	ContentType string
	HubURL      string
	Links       []string // extra Link values, e.g. `<capabilitylist>; rel="resourcesync"`
	Body        []byte
}

func (e *entry) size() int { return len(e.Body) + len(e.ContentType) + 64 }

func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func (e *entry) encode() []byte {
	b := make([]byte, 0, len(e.Body)+len(e.ContentType)+len(e.HubURL)+32)
	b = append(b, 1)
	b = binary.BigEndian.AppendUint64(b, uint64(e.Published.UnixNano()))
	b = appendStr(b, e.ContentType)
	b = appendStr(b, e.HubURL)
	b = binary.AppendUvarint(b, uint64(len(e.Links)))
	for _, l := range e.Links {
		b = appendStr(b, l)
	}
	return append(b, e.Body...)
}

var errBadEntry = errors.New("hub: damaged log entry")

func decodeEntry(seq uint64, b []byte) (*entry, error) {
	if len(b) < 9 || b[0] != 1 {
		return nil, errBadEntry
	}
	e := &entry{Seq: seq, Published: time.Unix(0, int64(binary.BigEndian.Uint64(b[1:9])))}
	b = b[9:]
	str := func() (string, bool) {
		n, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < n {
			return "", false
		}
		s := string(b[k : k+int(n)])
		b = b[k+int(n):]
		return s, true
	}
	var ok bool
	if e.ContentType, ok = str(); !ok {
		return nil, errBadEntry
	}
	if e.HubURL, ok = str(); !ok {
		return nil, errBadEntry
	}
	n, k := binary.Uvarint(b)
	if k <= 0 || n > 1000 {
		return nil, errBadEntry
	}
	b = b[k:]
	for range n {
		l, ok := str()
		if !ok {
			return nil, errBadEntry
		}
		e.Links = append(e.Links, l)
	}
	e.Body = bytes.Clone(b)
	return e, nil
}

// subRecord is a subscription as stored.
type subRecord struct {
	Topic     string    `json:"topic"`
	Callback  string    `json:"callback"`
	Secret    string    `json:"secret,omitempty"`
	Lease     int64     `json:"lease"` // seconds granted
	Expires   time.Time `json:"expires"`
	Cursor    uint64    `json:"cursor"` // last seq delivered (or dead-lettered)
	Attempt   int       `json:"attempt,omitempty"`
	FirstFail time.Time `json:"first_fail,omitzero"`
	LastError string    `json:"last_error,omitempty"`
}

// job is a pending verification of intent.
type job struct {
	ID          uint64    `json:"id"`
	Key         string    `json:"key"`
	Mode        string    `json:"mode"`
	Topic       string    `json:"topic"`
	Callback    string    `json:"callback"`
	Secret      string    `json:"secret,omitempty"`
	Lease       int64     `json:"lease"`
	VerifyToken string    `json:"verify_token,omitempty"`
	HasToken    bool      `json:"has_token,omitempty"`
	Attempts    int       `json:"attempts"`
	NextAt      time.Time `json:"next_at"`
}

// DeadLetter is a notification that could not be delivered to one
// subscription within GiveUpAfter.
type DeadLetter struct {
	ID          uint64    `json:"id"`
	Topic       string    `json:"topic"`
	Callback    string    `json:"callback"`
	Seq         uint64    `json:"seq"`
	Published   time.Time `json:"published"`
	ContentType string    `json:"content_type"`
	HubURL      string    `json:"hub_url"`
	Links       []string  `json:"links,omitempty"`
	Body        []byte    `json:"body"`
	Attempts    int       `json:"attempts"`
	FirstFail   time.Time `json:"first_fail"`
	LastError   string    `json:"last_error"`
	At          time.Time `json:"at"`
}

func (s *store) loadAll() (map[string]uint64, []subRecord, error) {
	heads := map[string]uint64{}
	var recs []subRecord
	err := s.db.View(func(tx *bbolt.Tx) error {
		err := tx.Bucket(bLog).ForEachBucket(func(k []byte) error {
			heads[string(k)] = tx.Bucket(bLog).Bucket(k).Sequence()
			return nil
		})
		if err != nil {
			return err
		}
		return tx.Bucket(bSubs).ForEach(func(k, v []byte) error {
			var r subRecord
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("hub: damaged subscription %q: %w", k, err)
			}
			recs = append(recs, r)
			return nil
		})
	})
	return heads, recs, err
}

// appendEntry appends e to its topic's log and sets e.Seq.
func (s *store) appendEntry(topic string, e *entry) error {
	return s.db.Update(func(tx *bbolt.Tx) error {
		b, err := tx.Bucket(bLog).CreateBucketIfNotExists([]byte(topic))
		if err != nil {
			return err
		}
		seq, err := b.NextSequence()
		if err != nil {
			return err
		}
		e.Seq = seq
		return b.Put(u64(seq), e.encode())
	})
}

// nextEntry returns the first entry of topic after seq, or nil.
func (s *store) nextEntry(topic string, after uint64) (*entry, error) {
	var e *entry
	err := s.db.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bLog).Bucket([]byte(topic))
		if b == nil {
			return nil
		}
		k, v := b.Cursor().Seek(u64(after + 1))
		if k == nil {
			return nil
		}
		var err error
		e, err = decodeEntry(binary.BigEndian.Uint64(k), v)
		return err
	})
	return e, err
}

// head returns the last seq of topic within tx.
func head(tx *bbolt.Tx, topic string) uint64 {
	if b := tx.Bucket(bLog).Bucket([]byte(topic)); b != nil {
		return b.Sequence()
	}
	return 0
}

func putSub(tx *bbolt.Tx, key string, r *subRecord) error {
	v, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return tx.Bucket(bSubs).Put([]byte(key), v)
}

func getSub(tx *bbolt.Tx, key string) (*subRecord, error) {
	v := tx.Bucket(bSubs).Get([]byte(key))
	if v == nil {
		return nil, nil
	}
	var r subRecord
	return &r, json.Unmarshal(v, &r)
}

func (s *store) putJob(j *job) error {
	return s.db.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bVerif)
		if j.ID == 0 {
			id, err := b.NextSequence()
			if err != nil {
				return err
			}
			j.ID = id
		}
		v, err := json.Marshal(j)
		if err != nil {
			return err
		}
		return b.Put(u64(j.ID), v)
	})
}

func (s *store) jobs() ([]job, error) {
	var out []job
	err := s.db.View(func(tx *bbolt.Tx) error {
		return tx.Bucket(bVerif).ForEach(func(k, v []byte) error {
			var j job
			if err := json.Unmarshal(v, &j); err != nil {
				return err
			}
			out = append(out, j)
			return nil
		})
	})
	return out, err
}

func putDead(tx *bbolt.Tx, d *DeadLetter) error {
	b := tx.Bucket(bDead)
	id, err := b.NextSequence()
	if err != nil {
		return err
	}
	d.ID = id
	v, err := json.Marshal(d)
	if err != nil {
		return err
	}
	return b.Put(u64(id), v)
}

func (s *store) counts() (verif, dead int) {
	s.db.View(func(tx *bbolt.Tx) error {
		verif = tx.Bucket(bVerif).Stats().KeyN
		dead = tx.Bucket(bDead).Stats().KeyN
		return nil
	})
	return
}
