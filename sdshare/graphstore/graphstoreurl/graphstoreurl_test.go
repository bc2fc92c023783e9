package graphstoreurl

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/resourcesync-go/resourcesync/sdshare/graphstore/boltstore"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in  string
		dir string
		err error
	}{
		{"sdshare-store", "sdshare-store", nil}, // the spelling of --store DIR
		{"bolt:/srv/g", "/srv/g", nil},
		{"bolt:", "", ErrNoPath},
		{"postgres://h/db", "", ErrScheme},
		{"", "", ErrScheme},
	} {
		if u, err := Parse(tc.in); !errors.Is(err, tc.err) || u.Dir != tc.dir {
			t.Errorf("Parse(%q) = %+v, %v", tc.in, u, err)
		}
	}
}

func TestOpen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "g")
	st, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	if _, err := os.Stat(boltstore.PathIn(dir)); err != nil {
		t.Error(err)
	}
}
