package subscriber

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/resourcesync-go/resourcesync/rs"
)

// ErrPayload is matched by every error of ParsePayload.
var ErrPayload = errors.New("subscriber: not a valid notification payload")

// ParsePayload reads a notification payload (RS-CN-1..3): a urlset whose
// root rs:md has capability want (change-notification when empty) and both
// from and until (until not before from), with at most rs.MaxEntries
// entries, each with a loc and a valid change. maxBytes bounds the
// document (0: no bound besides the decoder's).
func ParsePayload(raw []byte, want rs.Capability, maxBytes int64) (*rs.Head, []rs.Entry, error) {
	if want == "" {
		want = rs.CapChangeNotification
	}
	if maxBytes > 0 && int64(len(raw)) > maxBytes {
		return nil, nil, fmt.Errorf("%w: %d bytes, limit %d", ErrPayload, len(raw), maxBytes)
	}
	d := rs.NewDecoder(bytes.NewReader(raw))
	if maxBytes > 0 {
		d.Limits.MaxDocumentBytes = maxBytes
	}
	head, err := d.Head()
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrPayload, err)
	}
	if head.IsIndex() {
		return nil, nil, fmt.Errorf("%w: sitemapindex root (RS-CN-4)", ErrPayload)
	}
	if c := head.Capability(); c != want {
		return nil, nil, fmt.Errorf("%w: capability %q, want %q", ErrPayload, c, want)
	}
	md := head.MD
	if want == rs.CapChangeNotification && (md.From.IsZero() || md.Until.IsZero()) {
		return nil, nil, fmt.Errorf("%w: from and until are mandatory (RS-CN-1)", ErrPayload)
	}
	if !md.From.IsZero() && !md.Until.IsZero() && md.Until.Before(md.From) {
		return nil, nil, fmt.Errorf("%w: until %s before from %s", ErrPayload, md.Until, md.From)
	}
	var entries []rs.Entry
	for {
		e, err := d.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, nil, fmt.Errorf("%w: %v", ErrPayload, err)
		}
		if len(entries) >= rs.MaxEntries {
			return nil, nil, fmt.Errorf("%w: more than %d entries", ErrPayload, rs.MaxEntries)
		}
		if e.Loc == "" {
			return nil, nil, fmt.Errorf("%w: entry %d without loc", ErrPayload, len(entries)+1)
		}
		if !e.MD.Change.Valid() {
			return nil, nil, fmt.Errorf("%w: entry %d (%.200s) without a valid change", ErrPayload, len(entries)+1, e.Loc)
		}
		if want == rs.CapFrameworkNotification && e.MD.Capability == "" {
			return nil, nil, fmt.Errorf("%w: entry %d (%.200s) without capability (RS-FN-1)", ErrPayload, len(entries)+1, e.Loc)
		}
		entries = append(entries, *e)
	}
	d.TakeDiagnostics()
	h := *head
	return &h, entries, nil
}
