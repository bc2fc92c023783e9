package wspush

import (
	"bytes"
	"fmt"

	"github.com/resourcesync-go/resourcesync/feed/activity"
	"github.com/resourcesync-go/resourcesync/rs"
)

// FromEntry maps a Change List or change notification entry to the
// activity pushed for it: the object is the resource with its length,
// media type and digests after the change (none for a deletion).
func FromEntry(e *rs.Entry) *activity.Activity {
	a := &activity.Activity{Type: activity.FromChange(e.MD.Change), Object: &activity.Ref{ID: e.Loc, Type: "Document"}}
	if t := e.EventTime(); !t.IsZero() {
		a.EndTime = t.Time().UTC()
	}
	if e.MD.Change != rs.Deleted {
		a.Object.Format = e.MD.Type
		if e.MD.HasLength {
			n := e.MD.Length
			a.Object.Size = &n
		}
		a.Object.Digest = e.MD.Hashes.String()
	}
	return a
}

// MaxNotificationEntries bounds the activities taken from one change
// notification (a hub relays what Sources publish).
const MaxNotificationEntries = 100000

// FromNotification decodes a ResourceSync change notification payload
// (what a hub relays) into its activities, in order.
func FromNotification(body []byte) ([]*activity.Activity, error) {
	dec := rs.NewDecoder(bytes.NewReader(body))
	h, err := dec.Head()
	if err != nil {
		return nil, err
	}
	if c := h.Capability(); c != rs.CapChangeNotification && c != rs.CapChangeList {
		return nil, fmt.Errorf("wspush: capability %q is not change-notification", c)
	}
	var out []*activity.Activity
	for e, err := range dec.All() {
		if err != nil {
			return out, err
		}
		if len(out) >= MaxNotificationEntries {
			return out, fmt.Errorf("wspush: more than %d entries in one notification", MaxNotificationEntries)
		}
		out = append(out, FromEntry(e))
	}
	return out, nil
}
