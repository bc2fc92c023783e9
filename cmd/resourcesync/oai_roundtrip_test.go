package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/oaitest"
	"github.com/resourcesync-go/resourcesync/oai"
	"github.com/resourcesync-go/resourcesync/oai/harvest"
)

// TestOAIRoundTrip: an OAI-PMH repository → serve --oai-pmh → a sync
// mirror → oai serve --mirror --records → Catmandu's OAI harvester: the
// harvester gets the repository's records, identifier for identifier and
// metadata for metadata (compared canonically: the harvester reserialises),
// first all of them, then, after an update, an addition and a deletion in
// the repository, the current ones again and the deletion.
func TestOAIRoundTrip(t *testing.T) {
	syncLoopbackOnly(t)
	if _, err := exec.LookPath("catmandu"); err != nil {
		t.Fatalf("catmandu not found (apt-get install libcatmandu-oai-perl): %v", err)
	}
	repo := oaitest.New(t, oaitest.Options{PageSize: 2, Granularity: oai.Second})
	// Identifiers that need escaping in a file name and a URL, and metadata
	// whose namespaces are declared in different places.
	ids := []string{"oai:arXiv.org:2101.00001", "oai:repo:a/b c", "oai:repo:x%y", ".hidden", "oai:repo:ü"}
	meta := func(id, title string) map[string]string {
		if strings.HasSuffix(id, "c") {
			return map[string]string{oai.DCPrefix: `<dc xmlns="http://www.openarchives.org/OAI/2.0/oai_dc/"><title xmlns="http://purl.org/dc/elements/1.1/">` + title + `</title></dc>`}
		}
		return oaiDC(title)
	}
	for i, id := range ids {
		repo.Put(id, nil, meta(id, fmt.Sprint("record ", i)))
	}

	root := t.TempDir()
	dest := filepath.Join(root, "mirror")
	addr := freeAddr(t)
	base := "http://" + addr + "/"
	ctx, cancel := context.WithCancel(context.Background())
	var out, errs syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"resourcesync", "serve", "--addr", addr, "--oai-pmh", repo.URL, "--oai-interval", "200ms",
			"--state", filepath.Join(root, "state"), filepath.Join(root, "records")}, &out, &errs)
	}()
	defer func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("serve: exit %d\n%s", code, errs.String())
		}
	}()

	oaiAddr := freeAddr(t)
	var provider *syncBuffer
	// mirror syncs and checks what a harvester of the mirror gets.
	mirror := func(step string) {
		t.Helper()
		var code int
		var o, e string
		waitFor(t, step+": a sync of the harvested Source", 30*time.Second, func() bool {
			code, o, e = runCLI(t, "sync", base, dest)
			return code == 0
		})
		if provider == nil {
			provider, _ = background(t, "oai", "serve", "--mirror", "--records", "--rescan-interval", "200ms", "--addr", oaiAddr, dest)
			waitFor(t, "oai serve --mirror --records", 20*time.Second, func() bool { return strings.Contains(provider.String(), "serving OAI-PMH") })
		}
		want := map[string]string{}
		var deleted []string
		for r := range repo.All() {
			if r.Deleted {
				deleted = append(deleted, r.Identifier)
				continue
			}
			c, err := harvest.Canonical([]byte(r.Metadata[oai.DCPrefix]))
			if err != nil {
				t.Fatal(err)
			}
			want[r.Identifier] = string(c)
		}
		// oai serve rescans the mirror every 200 ms: wait for the scan
		// that follows the sync.
		var diff []string
		ok := waitUntil(20*time.Second, func() bool {
			diff = nil
			got, gone := catmanduRecords(t, "http://"+oaiAddr+"/")
			for id, m := range want {
				if got[id] != m {
					diff = append(diff, fmt.Sprintf("record %q: harvested %q, repository %q", id, got[id], m))
				}
			}
			for id := range got {
				if _, ok := want[id]; !ok {
					diff = append(diff, fmt.Sprintf("harvested %q, which the repository does not hold", id))
				}
			}
			for _, id := range deleted {
				if !gone[id] {
					diff = append(diff, fmt.Sprintf("the repository's deleted %q is not a deleted record downstream (deleted: %v)", id, gone))
				}
			}
			return len(diff) == 0
		})
		if !ok {
			t.Errorf("%s:\n%s\n(sync: %s%s)", step, strings.Join(diff, "\n"), o, e)
		}
	}
	mirror("first harvest")

	repo.Advance(time.Minute)
	repo.Put(ids[1], nil, meta(ids[1], "record 1, updated"))
	repo.Put("oai:repo:new", nil, oaiDC("new"))
	repo.Delete(ids[0])
	// The Source publishes the changes at its next harvest; sync until
	// the mirror has them.
	// The Source publishes the changes at its next harvest (every 200 ms).
	rel := harvest.RecordPath("oai:repo:new", oai.DCPrefix)
	waitFor(t, "the changes mirrored", 30*time.Second, func() bool {
		code, _, _ := runCLI(t, "sync", base, dest)
		_, err := os.Stat(filepath.Join(dest, filepath.FromSlash(rel)))
		return code == 0 && err == nil
	})
	mirror("after an update, an addition and a deletion")
}

// catmanduRecords harvests endpoint with Catmandu (oai_dc, raw) and
// returns each live record's metadata in canonical form and the deleted
// identifiers.
func catmanduRecords(t *testing.T, endpoint string) (map[string]string, map[string]bool) {
	t.Helper()
	got, gone, err := catmanduHarvest(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	return got, gone
}

func catmanduRecordsQuiet(endpoint string) (map[string]string, error) {
	got, _, err := catmanduHarvest(endpoint)
	return got, err
}

func catmanduHarvest(endpoint string) (map[string]string, map[string]bool, error) {
	out, err := exec.Command("catmandu", "convert", "OAI", "--url", endpoint, "--metadataPrefix", "oai_dc", "--handler", "raw", "to", "JSON").Output()
	if err != nil {
		return nil, nil, fmt.Errorf("catmandu: %v\n%s", err, out)
	}
	var recs []struct {
		ID       string `json:"_identifier"`
		Status   string `json:"_status"`
		Metadata string `json:"_metadata"`
	}
	if err := json.Unmarshal(out, &recs); err != nil {
		return nil, nil, fmt.Errorf("catmandu: %v\n%s", err, out)
	}
	got, gone := map[string]string{}, map[string]bool{}
	for _, r := range recs {
		if r.Status == "deleted" {
			gone[r.ID] = true
			continue
		}
		c, err := harvest.Canonical([]byte(r.Metadata))
		if err != nil {
			return nil, nil, fmt.Errorf("catmandu's record %s: %v\n%s", r.ID, err, r.Metadata)
		}
		got[r.ID] = string(c)
	}
	return got, gone, nil
}

// waitUntil calls ok until it holds or d has passed, and tells which.
func waitUntil(d time.Duration, ok func() bool) bool {
	for deadline := time.Now().Add(d); ; time.Sleep(100 * time.Millisecond) {
		if ok() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}
