package s3

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/resourcesync-go/resourcesync/storage"
)

// TestKill9: a process killed (SIGKILL) in the middle of a multipart upload
// leaves nothing under the key and nothing listed: only an incomplete
// upload, which CleanupUploads aborts; a new writer then commits the
// object whole.
func TestKill9(t *testing.T) {
	if os.Getenv("S3_KILL_HELPER") != "" {
		killHelper(t)
		return
	}
	t.Parallel()
	tb := newTestBucket(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestKill9$", "-test.count=1")
	cmd.Env = append(os.Environ(), "S3_KILL_HELPER="+tb.loc(), "S3_KILL_ENDPOINT="+tb.srv.Endpoint,
		"S3_KILL_ID="+tb.srv.AccessKey, "S3_KILL_SECRET="+tb.srv.SecretKey)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	sc := bufio.NewScanner(out)
	ready := false
	for sc.Scan() {
		if strings.Contains(sc.Text(), "PARTS-SENT") {
			ready = true
			break
		}
	}
	if !ready {
		t.Fatal("the helper did not start its upload")
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if tb.exists(t, "big") {
		t.Fatal("an object is under the key after kill -9")
	}
	tg := tb.target(t, "")
	if got := listKeys(t, tg, ""); len(got) != 0 {
		t.Fatalf("listed after kill -9: %v", keysOf(got))
	}
	if n := tb.uploads(t); n != 1 {
		t.Fatalf("%d incomplete uploads, want 1", n)
	}
	if n, err := tg.CleanupUploads(context.Background(), time.Now().Add(time.Second)); err != nil || n != 1 {
		t.Fatalf("CleanupUploads: %d %v", n, err)
	}
	data := pattern(2*MinPartSize+1, 6)
	if _, err := write(t, tg, "big", data, storage.PutOptions{Size: -1, NoReplace: true}); err != nil {
		t.Fatal(err)
	}
	r, _, err := tg.Open(context.Background(), "big")
	if err != nil || string(readAll(t, r)) != string(data) {
		t.Fatalf("the next run's object: %v", err)
	}
	if n := tb.uploads(t); n != 0 {
		t.Errorf("%d uploads left", n)
	}
}

// killHelper writes two parts of an object, says so, and waits to be
// killed.
func killHelper(t *testing.T) {
	o := Options{
		Endpoint:    os.Getenv("S3_KILL_ENDPOINT"),
		Credentials: credentials.NewStaticCredentialsProvider(os.Getenv("S3_KILL_ID"), os.Getenv("S3_KILL_SECRET"), ""),
		PartSize:    MinPartSize,
	}
	tg, err := OpenTarget(context.Background(), os.Getenv("S3_KILL_HELPER"), o)
	if err != nil {
		t.Fatal(err)
	}
	w, err := tg.Create(context.Background(), "big", storage.PutOptions{Size: -1, NoReplace: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(pattern(2*MinPartSize, 5)); err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString("PARTS-SENT\n")
	time.Sleep(time.Minute)
	t.Fatal("not killed")
}
