// Package locationtest is the registry round-trip suite of the state
// stores: for each spelling of a location (a plain path, file:///path,
// bolt:DIR, mem:NAME, postgres://…), open it, write, close, open it again
// from the same string and read back; and an unknown scheme or an
// unreachable database gives an error that names the known schemes and
// never shows a password.
package locationtest

import (
	"context"
	"crypto/rand"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/resourcesync-go/resourcesync/internal/testing/pgtest"
)

// Password is the password the suite puts in the URLs it opens: it must
// never appear in an error.
const Password = "Zs3cretPW9"

// Form is one spelling of a location.
type Form struct {
	Name string // the subtest's name
	Loc  string
}

// Local returns the local spellings, each naming a fresh directory: a
// plain path, a file:/// URL and bolt:DIR.
func Local(t testing.TB) []Form {
	return []Form{
		{"path", filepath.Join(t.TempDir(), "state")},
		{"file-url", FileURL(filepath.Join(t.TempDir(), "state"))},
		{"bolt", "bolt:" + filepath.Join(t.TempDir(), "state")},
	}
}

// FileURL is the file:/// URL of the absolute path p.
func FileURL(p string) string {
	p = filepath.ToSlash(p)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // file:///C:/dir
	}
	return "file://" + p
}

// Mem returns mem:NAME with a name no other test uses.
func Mem() Form { return Form{"mem", "mem:" + rand.Text()} }

// Postgres returns a fresh database of the test server with Password in
// its URL (the server trusts, so the password is ignored), or skips.
func Postgres(t testing.TB) Form {
	pgtest.Skip(t)
	return Form{"postgres", strings.Replace(pgtest.Database(t), "postgres@", "postgres:"+Password+"@", 1)}
}

// RoundTrip runs, for each form, open, write, Close, open again from the
// same string, read, Close.
func RoundTrip[S interface{ Close() error }](t *testing.T, forms []Form, open func(ctx context.Context, loc string) (S, error), write, read func(t *testing.T, s S)) {
	for _, f := range forms {
		t.Run(f.Name, func(t *testing.T) {
			ctx := context.Background()
			s, err := open(ctx, f.Loc)
			if err != nil {
				t.Fatalf("open %s: %v", f.Name, err)
			}
			write(t, s)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s, err = open(ctx, f.Loc)
			if err != nil {
				t.Fatalf("open %s again: %v", f.Name, err)
			}
			defer s.Close()
			read(t, s)
		})
	}
}

// Unknown checks that open refuses a scheme it does not know with an
// error matching want that names every scheme of known, and that neither
// it nor the error of an unreachable database shows the password.
func Unknown(t *testing.T, open func(ctx context.Context, loc string) error, want error, known []string) {
	ctx := context.Background()
	err := open(ctx, "mysql://u:"+Password+"@127.0.0.1/db")
	if !errors.Is(err, want) {
		t.Errorf("unknown scheme: %v, want %v", err, want)
	}
	if err != nil {
		for _, k := range known {
			if !strings.Contains(err.Error(), k) {
				t.Errorf("unknown scheme: %q does not name %q", err, k)
			}
		}
		if strings.Contains(err.Error(), Password) {
			t.Errorf("unknown scheme: the error shows the password: %v", err)
		}
	}
	for _, loc := range []string{
		"postgres://u:" + Password + "@127.0.0.1:1/db?connect_timeout=2",
		"postgresql://u@127.0.0.1:1/db?connect_timeout=2&password=" + Password,
		"postgres://u:" + Password + "@127.0.0.1:notaport/db",
	} {
		if err := open(ctx, loc); err == nil || strings.Contains(err.Error(), Password) {
			t.Errorf("%s: %v", loc, err)
		}
	}
}
