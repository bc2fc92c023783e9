package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/resourcesync-go/resourcesync/aggregate"
	"github.com/resourcesync-go/resourcesync/internal/testing/s3test"
)

// TestAggregateIntoBucket: a sources line whose DEST is s3://BUCKET/PREFIX
// mirrors into the bucket (read back by aws), the endpoint given by
// aggregate's --s3-endpoint alone, its state under
// ROOT/.aggregate/targets/; a second --once run after a deletion mirrors
// it; a line beside it with a directory DEST is as before.
func TestAggregateIntoBucket(t *testing.T) {
	srv := s3test.Shared(t)
	s3test.SkipAWS(t)
	srv.SetEnv(t)
	t.Setenv("AWS_ENDPOINT_URL", "")
	t.Setenv("AWS_ENDPOINT_URL_S3", "")
	aggCLILoopbackOnly(t)
	bucket := srv.NewBucket(t)
	dir := t.TempDir()
	files := map[string]string{}
	for i := range 5 {
		k := fmt.Sprintf("s/f%d.txt", i)
		files[k] = strings.Repeat(fmt.Sprint(i), 10*i+1)
		os.MkdirAll(filepath.Join(dir, "s"), 0o755)
		os.WriteFile(filepath.Join(dir, filepath.FromSlash(k)), []byte(files[k]), 0o644)
	}
	base, update := serveDir(t, dir)
	root, sources := t.TempDir(), filepath.Join(t.TempDir(), "sources.txt")
	loc := "s3://" + bucket + "/agg"
	writeSources(t, sources, base+" "+loc+"\n"+base+" local\n")
	once := func(what string) {
		t.Helper()
		code, out, errOut := runCLI(t, "aggregate", "--once", "--s3-endpoint", srv.Endpoint, "--sources", sources, "--root", root)
		if code != 0 {
			t.Fatalf("%s: exit %d\n%s\n%s", what, code, out, errOut)
		}
		if strings.Contains(out+errOut, srv.SecretKey) {
			t.Errorf("%s: the output holds the secret key", what)
		}
		if d := treeDiff(files, readTree(t, awsCopy(t, srv, loc))); d != "" {
			t.Fatalf("%s: the bucket:\n%s", what, d)
		}
		if d := treeDiff(files, readTree(t, filepath.Join(root, "local"))); d != "" {
			t.Fatalf("%s: the directory:\n%s", what, d)
		}
	}
	once("baseline")
	if _, err := os.Stat(aggregate.TargetStateDir(root, loc)); err != nil {
		t.Errorf("the bucket line's state: %v", err)
	}
	os.Remove(filepath.Join(dir, "s", "f3.txt"))
	delete(files, "s/f3.txt")
	update()
	once("after a deletion")
}
