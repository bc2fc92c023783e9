package s3test

import (
	"strings"
	"testing"
)

// recorder is a testing.TB that records Fatal and Skip instead of ending
// the test.
type recorder struct {
	testing.TB
	fatal, skip string
}

func (r *recorder) Helper()               {}
func (r *recorder) Fatal(args ...any)     { r.fatal = sprint(args) }
func (r *recorder) Skip(args ...any)      { r.skip = sprint(args) }
func (r *recorder) Fatalf(string, ...any) {}

func sprint(args []any) string {
	var b strings.Builder
	for _, a := range args {
		if e, ok := a.(error); ok {
			b.WriteString(e.Error())
		}
	}
	return b.String()
}

// TestMissingServer: without versitygw a test skips, saying how to
// install it; under CI it fails instead.
func TestMissingServer(t *testing.T) {
	t.Setenv("RESOURCESYNC_VERSITYGW", "/nonexistent/versitygw")
	for _, ci := range []string{"", "true"} {
		t.Setenv("CI", ci)
		r := &recorder{TB: t}
		Skip(r)
		got := r.skip
		if ci == "true" {
			got = r.fatal
		}
		if got == "" || (ci == "true") != (r.fatal != "") || !strings.Contains(got, "RESOURCESYNC_VERSITYGW") {
			t.Errorf("CI=%q: skip %q, fatal %q", ci, r.skip, r.fatal)
		}
	}
}

// TestServer: the server answers the independent client on loopback with
// its keys, and a fresh bucket is empty.
func TestServer(t *testing.T) {
	s := Shared(t)
	if !strings.HasPrefix(s.Endpoint, "http://127.0.0.1:") {
		t.Fatalf("endpoint %s", s.Endpoint)
	}
	SkipAWS(t)
	b := s.NewBucket(t)
	s.Put(t, b, "a/b.txt", []byte("hello"))
	if got := s.Get(t, b, "a/b.txt"); string(got) != "hello" {
		t.Errorf("read back %q", got)
	}
	if out := s.AWS(t, nil, "s3", "ls", "--recursive", "s3://"+b+"/"); !strings.Contains(string(out), "a/b.txt") {
		t.Errorf("ls: %s", out)
	}
}
