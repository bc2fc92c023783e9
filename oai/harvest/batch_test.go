package harvest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestBatchRecordTwice: a record changed by two pages of one batch (not
// yet renamed into place when the later page is staged) ends as the later
// page says, even where that is the file's old content; a record created
// and deleted in one batch leaves no file; the record count stays exact.
func TestBatchRecordTwice(t *testing.T) {
	setBatch(t, 3)
	harvest := 0
	rec := func(id, md string) string {
		return hrec(id, "2024-01-01T00:00:00Z", `<r xmlns="urn:r">`+md+`</r>`)
	}
	del := func(id string) string {
		return `<record><header status="deleted"><identifier>` + id + `</identifier><datestamp>2024-01-01T00:00:00Z</datestamp></header></record>`
	}
	x := newHostile(t, func(q map[string][]string) (string, string) {
		if q["verb"][0] == "Identify" {
			return "", fmt.Sprintf(identifyBody, "persistent")
		}
		tok := ""
		if v := q["resumptionToken"]; len(v) > 0 {
			tok = v[0]
		} else {
			harvest++
		}
		if harvest == 1 {
			return "", "<ListRecords>" + rec("oai:x:X", "A") + rec("oai:x:Z", "old") + "</ListRecords>"
		}
		switch tok {
		case "":
			return "", "<ListRecords>" + rec("oai:x:X", "B") + rec("oai:x:Y", "new") + "<resumptionToken>t2</resumptionToken></ListRecords>"
		case "t2":
			return "", "<ListRecords>" + del("oai:x:Y") + del("oai:x:Z") + "<resumptionToken>t3</resumptionToken></ListRecords>"
		default:
			return "", "<ListRecords>" + rec("oai:x:X", "A") + rec("oai:x:Z", "back") + "</ListRecords>"
		}
	})
	x.h.Close()
	x.cfg.FullEvery = -1
	var commits [][]string
	x.cfg.Committed = func(_ context.Context, paths []string) error {
		commits = append(commits, slices.Clone(paths))
		return nil
	}
	h, err := New(x.cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	x.h = h
	for i := range 2 {
		if _, err := x.harvest(); err != nil {
			t.Fatalf("harvest %d: %v", i+1, err)
		}
	}
	read := func(id string) string {
		b, err := os.ReadFile(filepath.Join(x.cfg.Dir, filepath.FromSlash(RecordPath(id, "oai_dc"))))
		if err != nil {
			return "(none)"
		}
		return string(b)
	}
	if got := read("oai:x:X"); got != `<r xmlns="urn:r">A</r>` {
		t.Errorf("X = %s, want A: the later page's version", got)
	}
	if got := read("oai:x:Y"); got != "(none)" {
		t.Errorf("Y = %s, want no file: created and deleted in one batch", got)
	}
	if got := read("oai:x:Z"); got != `<r xmlns="urn:r">back</r>` {
		t.Errorf("Z = %s, want back", got)
	}
	if n := x.h.Status().Records; n != 2 {
		t.Errorf("Status.Records = %d, want 2", n)
	}
	if len(commits) != 2 {
		t.Fatalf("%d commits, want one per harvest: %q", len(commits), commits)
	}
	want := []string{RecordPath("oai:x:X", "oai_dc"), RecordPath("oai:x:Y", "oai_dc"), RecordPath("oai:x:Z", "oai_dc")}
	slices.Sort(want)
	if !slices.Equal(commits[1], want) {
		t.Errorf("the batch reported %q, want each path once: %q", commits[1], want)
	}
}
