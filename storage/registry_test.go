package storage

import (
	"context"
	"errors"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
)

func TestScheme(t *testing.T) {
	for loc, want := range map[string]string{
		"/srv/dir": "file", "rel": "file", `C:\dir`: "file", "file:///srv/dir": "file",
		"S3://bucket/prefix": "s3", "mem://x": "mem", "": "file",
	} {
		if got := Scheme(loc); got != want {
			t.Errorf("Scheme(%q) = %q, want %q", loc, got, want)
		}
	}
}

// TestRegistry: a scheme opens with its side; a missing side, an unknown
// scheme and a bad URL are ErrUnknownScheme or an error, naming the known
// schemes, never showing a password.
func TestRegistry(t *testing.T) {
	ctx := context.Background()
	var got *url.URL
	Register("test-reg", Opener{Content: func(_ context.Context, loc string, u *url.URL) (Content, error) {
		got = u
		return nil, nil
	}})
	if _, err := OpenContent(ctx, "test-reg://u:pw@host/p"); err != nil || got == nil || got.Host != "host" {
		t.Fatalf("OpenContent: %v, %v", got, err)
	}
	if _, err := OpenTarget(ctx, "test-reg://host/p"); !errors.Is(err, ErrUnknownScheme) || !strings.Contains(err.Error(), "cannot be a mirror") {
		t.Errorf("missing side: %v", err)
	}
	_, err := OpenTarget(ctx, "nosuch://u:Zsecret9@host/p")
	if !errors.Is(err, ErrUnknownScheme) || !strings.Contains(err.Error(), "test-reg") || strings.Contains(err.Error(), "Zsecret9") {
		t.Errorf("unknown scheme: %v", err)
	}
	if _, err := OpenContent(ctx, "test-reg://u:Zsecret9@host:bad/p"); err == nil || strings.Contains(err.Error(), "Zsecret9") {
		t.Errorf("bad URL: %v", err)
	}
	defer func() {
		if recover() == nil {
			t.Error("a side registered twice did not panic")
		}
	}()
	Register("TEST-REG", Opener{Content: func(context.Context, string, *url.URL) (Content, error) { return nil, nil }})
}

func TestLocalPath(t *testing.T) {
	for loc, want := range map[string]string{
		"/srv/dir": "/srv/dir", "rel": "rel", "file:///srv/a%20b": filepath.FromSlash("/srv/a b"), "file:rel": "rel",
	} {
		if got, err := LocalPath(loc); err != nil || got != want {
			t.Errorf("LocalPath(%q) = %q, %v; want %q", loc, got, err, want)
		}
	}
	for _, loc := range []string{"s3://b/p", "file://host/x", ""} {
		if got, err := LocalPath(loc); err == nil {
			t.Errorf("LocalPath(%q) = %q", loc, got)
		}
	}
}

// TestRegistryNoPasswordInParseError: a password holding "/" (as AWS
// secret keys do), left unescaped, makes a location that does not parse
// as a URL; the parse error must not quote any piece of it.
func TestRegistryNoPasswordInParseError(t *testing.T) {
	for _, loc := range []string{
		"nosuch://AKIAX:wJalrXUtnFEMI/K7MDENG+bPxRfiCY@bucket/p",
		"nosuch://AKIAX:wJalrXUtnFEMI%zz@bucket/p",
	} {
		_, err := OpenContent(context.Background(), loc)
		if err == nil {
			continue
		}
		for _, piece := range []string{"wJalrXUtnFEMI", "K7MDENG"} {
			if strings.Contains(err.Error(), piece) {
				t.Errorf("%s: the error shows the password: %v", loc, err)
			}
		}
	}
}

// TestFileName: a location's state directory name is a file name (no
// separator, not hidden, at most 100 bytes before its digest), and two
// locations that read alike get different names.
func TestFileName(t *testing.T) {
	a, b := FileName("s3://bkt/a:b"), FileName("s3://bkt/a/b")
	if a == b {
		t.Errorf("s3://bkt/a:b and s3://bkt/a/b share the name %q", a)
	}
	for _, loc := range []string{"s3://bkt/a/b", "s3://bkt/" + strings.Repeat("p", 300), "..s3://x", `s3://b\c` + "\x01"} {
		n := FileName(loc)
		if strings.ContainsAny(n, `/\:`+"\x01") || strings.HasPrefix(n, ".") || len(n) > 100+1+8 {
			t.Errorf("FileName(%q) = %q", loc, n)
		}
	}
	if got := FileName("s3://bkt/m/"); !strings.HasPrefix(got, "s3___bkt_m-") {
		t.Errorf("FileName(s3://bkt/m/) = %q", got)
	}
}
