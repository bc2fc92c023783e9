package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestDefaultTargetStateName: the default state directory of a mirror
// into a storage location is a file name on every system (a Location
// names its endpoint: "?endpoint=http://h:9000"), and two locations
// never share one.
func TestDefaultTargetStateName(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	seen := map[string]string{}
	for _, loc := range []string{
		"s3://b/p", "s3://b/p?endpoint=http://127.0.0.1:9000", "s3://b/p?endpoint=http://127.0.0.1:9001",
		`s3://b/a"b<c>d|e*f`,
	} {
		dir, err := defaultTargetState(loc)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(dir)
		if strings.ContainsAny(name, `/\:?*<>|"`) {
			t.Errorf("%s: state directory name %q is not a file name on Windows", loc, name)
		}
		if other, ok := seen[name]; ok {
			t.Errorf("%s and %s share the state %s", loc, other, name)
		}
		seen[name] = loc
	}
}
