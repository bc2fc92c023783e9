package dump_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/resourcesync-go/resourcesync/destination/dump"
	"github.com/resourcesync-go/resourcesync/rs"
)

// FuzzOpen: whatever the bytes, NewReader and Each do not panic, refuse
// with an *Error, and never hand out more than MaxMemberBytes for a
// member. The limits are small so that no input can make an iteration
// allocate or inflate much.
func FuzzOpen(f *testing.F) {
	f.Add(mkzip(f, okMembers()...))
	f.Add(mkzip(f,
		zm{name: "changes/1/a.txt", data: bodyA, deflate: true},
		zm{name: "extra", data: bodyB},
		manifest(cdm(change("http://example.com/a", "created", "/changes/1/a.txt", bodyA),
			change("http://example.com/b", "deleted", "", nil)))))
	for _, tc := range hostile(f) {
		if len(tc.zip) < 64<<10 {
			f.Add(tc.zip)
		}
	}
	lim := dump.Limits{MaxMembers: 1000, MaxMemberBytes: 64 << 10, MaxTotalBytes: 1 << 20, MaxManifestBytes: 64 << 10}
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := dump.NewReader(bytes.NewReader(b), int64(len(b)), lim)
		if err != nil {
			var de *dump.Error
			if !errors.As(err, &de) {
				t.Fatalf("error %v (%T) is not a *dump.Error", err, err)
			}
			return
		}
		if p.Entries() < 0 || p.Unlisted() < 0 {
			t.Fatal("negative counts")
		}
		p.Each(context.Background(), func(e rs.Entry, r io.Reader) error {
			if r == nil {
				return nil
			}
			n, err := io.Copy(io.Discard, r)
			if n > lim.MaxMemberBytes {
				t.Fatalf("read %d bytes from %s", n, e.MD.Path)
			}
			if err != nil {
				var de *dump.Error
				if !errors.As(err, &de) {
					t.Fatalf("read error %v (%T) is not a *dump.Error", err, err)
				}
			}
			return err
		})
	})
}
