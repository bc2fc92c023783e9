package boltstore

import (
	"bytes"
	"encoding/binary"

	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore"
	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore/internal/shared"
)

func u64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// encodeEntry writes format 1: version byte, published (ns, BE), content
// type, hub URL, link count and links (uvarint-prefixed), then the body.
func encodeEntry(e *hubstore.Entry) []byte {
	b := make([]byte, 0, len(e.Body)+len(e.ContentType)+len(e.HubURL)+32)
	b = append(b, 1)
	var ns int64
	if !e.Published.IsZero() {
		ns = e.Published.UnixNano()
	}
	b = binary.BigEndian.AppendUint64(b, uint64(ns))
	b = appendStr(b, e.ContentType)
	b = appendStr(b, e.HubURL)
	b = binary.AppendUvarint(b, uint64(len(e.Links)))
	for _, l := range e.Links {
		b = appendStr(b, l)
	}
	return append(b, e.Body...)
}

var errBadEntry = fmt.Errorf("boltstore: log entry: %w", hubstore.ErrCorrupt)

func decodeEntry(seq uint64, b []byte) (hubstore.Entry, error) {
	if len(b) < 9 || b[0] != 1 {
		return hubstore.Entry{}, errBadEntry
	}
	e := hubstore.Entry{Seq: seq}
	if ns := int64(binary.BigEndian.Uint64(b[1:9])); ns != 0 {
		e.Published = time.Unix(0, ns).UTC()
	}
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
		return e, errBadEntry
	}
	if e.HubURL, ok = str(); !ok {
		return e, errBadEntry
	}
	n, k := binary.Uvarint(b)
	if k <= 0 || n > 1000 {
		return e, errBadEntry
	}
	b = b[k:]
	for range n {
		l, ok := str()
		if !ok {
			return e, errBadEntry
		}
		e.Links = append(e.Links, l)
	}
	e.Body = bytes.Clone(b)
	return e, nil
}

// subRecord is a subscription as stored (the hub's format since v1; the
// key is the bucket key).
type subRecord struct {
	Topic     string    `json:"topic"`
	Callback  string    `json:"callback"`
	Secret    string    `json:"secret,omitempty"`
	Lease     int64     `json:"lease"`
	Expires   time.Time `json:"expires"`
	Cursor    uint64    `json:"cursor"`
	Attempt   int       `json:"attempt,omitempty"`
	FirstFail time.Time `json:"first_fail,omitzero"`
	LastError string    `json:"last_error,omitempty"`
	NextAt    time.Time `json:"next_at,omitzero"`
}

func toRecord(s *hubstore.Subscription) subRecord {
	return subRecord{Topic: s.Topic, Callback: s.Callback, Secret: s.Secret, Lease: s.Lease, Expires: shared.Time(s.Expires),
		Cursor: s.Cursor, Attempt: s.Attempt, FirstFail: shared.Time(s.FirstFail), LastError: s.LastError, NextAt: shared.Time(s.NextAt)}
}

func (r *subRecord) sub(key string) hubstore.Subscription {
	return hubstore.Subscription{Key: key, Topic: r.Topic, Callback: r.Callback, Secret: r.Secret, Lease: r.Lease,
		Expires: shared.Time(r.Expires), Cursor: r.Cursor, Attempt: r.Attempt, FirstFail: shared.Time(r.FirstFail),
		LastError: r.LastError, NextAt: shared.Time(r.NextAt)}
}

// jobRecord is a verification job as stored.
type jobRecord struct {
	ID          uint64    `json:"id"`
	Key         string    `json:"key"`
	Host        string    `json:"host,omitempty"` // absent in files of hubs before hubstore
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

func toJobRecord(j *hubstore.Job) jobRecord {
	return jobRecord{ID: j.ID, Key: j.Key, Host: j.Host, Mode: j.Mode, Topic: j.Topic, Callback: j.Callback, Secret: j.Secret,
		Lease: j.Lease, VerifyToken: j.VerifyToken, HasToken: j.HasToken, Attempts: j.Attempts, NextAt: shared.Time(j.NextAt)}
}

func (r *jobRecord) job() hubstore.Job {
	host := r.Host
	if host == "" {
		host = authority(r.Callback)
	}
	return hubstore.Job{ID: r.ID, Key: r.Key, Host: host, Mode: r.Mode, Topic: r.Topic, Callback: r.Callback, Secret: r.Secret,
		Lease: r.Lease, VerifyToken: r.VerifyToken, HasToken: r.HasToken, Attempts: r.Attempts, NextAt: shared.Time(r.NextAt)}
}

// authority is the hub's per-host unit (host:port, the scheme's default
// port when none), for jobs written before Job.Host was stored.
func authority(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return u
	}
	port := p.Port()
	if port == "" {
		port = "80"
		if strings.EqualFold(p.Scheme, "https") {
			port = "443"
		}
	}
	return net.JoinHostPort(strings.ToLower(p.Hostname()), port)
}

func normDead(d hubstore.DeadLetter) hubstore.DeadLetter {
	d.Published, d.FirstFail, d.At = shared.Time(d.Published), shared.Time(d.FirstFail), shared.Time(d.At)
	return d
}
