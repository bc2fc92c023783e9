package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/oai"
	"github.com/resourcesync-go/resourcesync/oai/harvest"
)

// harvested is what a harvester got of one record.
type harvested struct {
	datestamp, status, dcIdentifier string
}

var dcIdentifierRE = regexp.MustCompile(`<dc:identifier>([^<]*)</dc:identifier>`)

// harvestOAIPMH runs HTTP::OAI's oai_pmh harvester (ListRecords, every
// page) and returns the records by identifier.
func harvestOAIPMH(t *testing.T, endpoint string, args ...string) map[string]harvested {
	t.Helper()
	bin, err := exec.LookPath("oai_pmh")
	if err != nil {
		t.Fatalf("oai_pmh not found (apt-get install libhttp-oai-perl): %v", err)
	}
	cmd := exec.Command(bin, append(append([]string{"--metadataPrefix", "oai_dc"}, args...), endpoint)...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("oai_pmh %v: %v\n%s", args, err, out)
	}
	got := map[string]harvested{}
	for _, rec := range strings.Split(string(out), "\f") {
		if strings.TrimSpace(rec) == "" {
			continue
		}
		var id string
		var h harvested
		for _, line := range strings.Split(rec, "\n") {
			k, v, _ := strings.Cut(line, ": ")
			switch strings.TrimSpace(k) {
			case "identifier":
				id = strings.TrimSpace(v)
			case "datestamp":
				h.datestamp = strings.TrimSpace(v)
			case "status":
				h.status = strings.TrimSpace(v)
			}
		}
		if m := dcIdentifierRE.FindStringSubmatch(rec); m != nil {
			h.dcIdentifier = m[1]
		}
		if _, dup := got[id]; dup || id == "" {
			t.Fatalf("oai_pmh: identifier %q missing or twice\n%s", id, out)
		}
		got[id] = h
	}
	return got
}

// harvestCatmandu runs Catmandu's OAI importer (ListRecords, raw handler)
// and returns the records by identifier.
func harvestCatmandu(t *testing.T, endpoint string, args ...string) map[string]harvested {
	t.Helper()
	bin, err := exec.LookPath("catmandu")
	if err != nil {
		t.Fatalf("catmandu not found (apt-get install libcatmandu-oai-perl): %v", err)
	}
	all := append([]string{"convert", "OAI", "--url", endpoint, "--metadataPrefix", "oai_dc", "--handler", "raw"}, args...)
	out, err := exec.Command(bin, append(all, "to", "JSON")...).Output()
	if err != nil {
		t.Fatalf("catmandu %v: %v\n%s", args, err, out)
	}
	var recs []struct {
		ID        string `json:"_identifier"`
		Datestamp string `json:"_datestamp"`
		Status    string `json:"_status"`
		Metadata  string `json:"_metadata"`
	}
	if err := json.Unmarshal(out, &recs); err != nil {
		t.Fatalf("catmandu: %v\n%s", err, out)
	}
	got := map[string]harvested{}
	for _, r := range recs {
		h := harvested{datestamp: r.Datestamp, status: r.Status}
		if m := dcIdentifierRE.FindStringSubmatch(r.Metadata); m != nil {
			h.dcIdentifier = m[1]
		}
		if _, dup := got[r.ID]; dup {
			t.Fatalf("catmandu: %s twice", r.ID)
		}
		got[r.ID] = h
	}
	return got
}

// ours lists the provider's own answer (ListIdentifiers + GetRecord's
// dc:identifier) through its tokens.
func ours(t *testing.T, endpoint, from string) map[string]harvested {
	t.Helper()
	got := map[string]harvested{}
	q := "verb=ListRecords&metadataPrefix=oai_dc"
	if from != "" {
		q += "&from=" + from
	}
	recRE := regexp.MustCompile(`(?s)<record><header( status="deleted")?><identifier>([^<]*)</identifier><datestamp>([^<]*)</datestamp>.*?</record>`)
	tokRE := regexp.MustCompile(`<resumptionToken[^>]*>([^<]+)</resumptionToken>`)
	for {
		resp, err := http.Get(endpoint + "?" + q)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, m := range recRE.FindAllStringSubmatch(string(b), -1) {
			h := harvested{datestamp: m[3]}
			if m[1] != "" {
				h.status = "deleted"
			}
			if d := dcIdentifierRE.FindStringSubmatch(m[0]); d != nil {
				h.dcIdentifier = d[1]
			}
			got[m[2]] = h
		}
		tm := tokRE.FindStringSubmatch(string(b))
		if tm == nil {
			return got
		}
		q = "verb=ListRecords&resumptionToken=" + tm[1]
	}
}

func same(t *testing.T, who string, got, want map[string]harvested) {
	t.Helper()
	if fmt.Sprint(sortedKeys(got)) != fmt.Sprint(sortedKeys(want)) {
		t.Fatalf("%s harvested %v\nwant %v", who, sortedKeys(got), sortedKeys(want))
	}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("%s: %s: %+v, want %+v", who, id, got[id], w)
		}
	}
}

func sortedKeys(m map[string]harvested) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// Real harvesters (HTTP::OAI's oai_pmh, Catmandu's OAI importer) against
// oai serve over a publish output: every record through resumption
// tokens, then an incremental harvest from the first one's time that gets
// exactly the changes, the deletion included.
func TestOAIServeRealHarvesters(t *testing.T) {
	dir, out, state := t.TempDir(), t.TempDir(), t.TempDir()
	for i := range 23 {
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%02d.txt", i)), []byte(fmt.Sprint("v1 ", i)), 0o644)
	}
	os.WriteFile(filepath.Join(dir, "a b.txt"), []byte("space"), 0o644)
	publish := func() {
		t.Helper()
		if code, o, e := runCLI(t, "publish", "--base-url", "http://data.example.org/", "--out", out, "--state", state, dir); code != 0 {
			t.Fatalf("publish: %d %s %s", code, o, e)
		}
	}
	serve := func() string {
		addr := freeAddr(t)
		o, _ := background(t, "oai", "serve", "--addr", addr, "--page-size", "4", "--state", state, "--base-url", "http://data.example.org/", dir)
		waitFor(t, "oai serve", 20*time.Second, func() bool { return strings.Contains(o.String(), "serving OAI-PMH") })
		return "http://" + addr + "/"
	}
	publish()
	endpoint := serve()
	want := ours(t, endpoint, "")
	if len(want) != 24 || want["oai:data.example.org:a%20b.txt"].dcIdentifier != "http://data.example.org/a%20b.txt" {
		t.Fatalf("the provider lists %d records: %v", len(want), want)
	}
	same(t, "oai_pmh", harvestOAIPMH(t, endpoint), want)
	same(t, "catmandu", harvestCatmandu(t, endpoint), want)

	// Changes recorded after `from`: an update, a deletion, a new file
	// with an old mtime.
	from := time.Now().Truncate(time.Second).Add(time.Second)
	time.Sleep(time.Until(from))
	os.WriteFile(filepath.Join(dir, "f05.txt"), []byte("v2"), 0o644)
	os.Remove(filepath.Join(dir, "f03.txt"))
	os.WriteFile(filepath.Join(dir, "old.txt"), []byte("old"), 0o644)
	old := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	os.Chtimes(filepath.Join(dir, "old.txt"), old, old)
	publish() // while oai serve runs: it opens the state per request
	fromS := oai.Second.Format(from)
	inc := ours(t, endpoint, fromS)
	if fmt.Sprint(sortedKeys(inc)) != "[oai:data.example.org:f03.txt oai:data.example.org:f05.txt oai:data.example.org:old.txt]" ||
		inc["oai:data.example.org:f03.txt"].status != "deleted" {
		t.Fatalf("incremental: %v", inc)
	}
	same(t, "oai_pmh --from", harvestOAIPMH(t, endpoint, "--from", fromS), inc)
	same(t, "catmandu --from", harvestCatmandu(t, endpoint, "--from", fromS), inc)
	// A full harvest now holds the deletion too.
	all := ours(t, endpoint, "")
	if len(all) != 25 || all["oai:data.example.org:f03.txt"].status != "deleted" {
		t.Fatalf("full list after the changes: %v", all)
	}
	same(t, "catmandu (all)", harvestCatmandu(t, endpoint), all)
	same(t, "oai_pmh (all)", harvestOAIPMH(t, endpoint), all)
}

// serve --oai-pmh-endpoint answers OAI-PMH beside the Source's documents,
// from the state serve keeps current.
func TestServeOAIPMHEndpoint(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a"), 0o644)
	os.WriteFile(filepath.Join(dir, "r.xml"), []byte(`<r xmlns="urn:example:r"/>`), 0o644)
	base, _ := startServe(t, dir, "--oai-pmh-endpoint", "oai", "--oai-metadata-format", "r=urn:example:r")
	get := func(q string) string {
		resp, err := http.Get(base + "oai?" + q)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	id := "oai:127.0.0.1:a.txt"
	if b := get("verb=ListIdentifiers&metadataPrefix=oai_dc"); !strings.Contains(b, "<identifier>"+id+"</identifier>") || !strings.Contains(b, "r.xml") {
		t.Errorf("ListIdentifiers: %s", b)
	}
	if b := get("verb=ListRecords&metadataPrefix=r"); !strings.Contains(b, `<metadata><r xmlns="urn:example:r"/></metadata>`) || strings.Contains(b, "a.txt") {
		t.Errorf("ListRecords r: %s", b)
	}
	if b := get("verb=Identify"); !strings.Contains(b, "<baseURL>"+base+"oai</baseURL>") {
		t.Errorf("Identify: %s", b)
	}
	// The Source's own resources are still served.
	resp, err := http.Get(base + "a.txt")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("a.txt: %v %v", resp, err)
	}
	resp.Body.Close()
}

// oai serve --mirror over a mirror made by sync offers the Source's
// records under the Source's identifiers; a change synced later (an
// update, a deletion) is harvested incrementally from a time before the
// mirror received it.
func TestOAIServeMirror(t *testing.T) {
	syncLoopbackOnly(t)
	dir, dest := t.TempDir(), t.TempDir()
	for i := range 6 {
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.txt", i)), []byte(fmt.Sprint("v1 ", i)), 0o644)
	}
	base, _ := startServe(t, dir, "--watch", "--oai-pmh-endpoint", "oai")
	syncOnce := func() {
		t.Helper()
		if code, o, e := runCLI(t, "sync", base, dest); code != 0 {
			t.Fatalf("sync: %d %s %s", code, o, e)
		}
	}
	syncOnce()
	addr := freeAddr(t)
	o, _ := background(t, "oai", "serve", "--mirror", "--addr", addr, "--rescan-interval", "50ms", dest)
	waitFor(t, "oai serve --mirror", 20*time.Second, func() bool { return strings.Contains(o.String(), "serving OAI-PMH") })
	mirror := "http://" + addr + "/"
	strip := func(m map[string]harvested) map[string]harvested {
		out := map[string]harvested{}
		for k, v := range m {
			out[k] = harvested{status: v.status, dcIdentifier: v.dcIdentifier}
		}
		return out
	}
	upstream := ours(t, base+"oai", "")
	if len(upstream) != 6 {
		t.Fatalf("upstream: %v", upstream)
	}
	same(t, "mirror", strip(ours(t, mirror, "")), strip(upstream))

	// A harvest's from is at the second: wait for the next one, past
	// the baseline's.
	next := time.Now().Truncate(time.Second).Add(time.Second)
	time.Sleep(time.Until(next))
	from := oai.Second.Format(next)
	os.WriteFile(filepath.Join(dir, "f1.txt"), []byte("v2, longer"), 0o644)
	os.Remove(filepath.Join(dir, "f2.txt"))
	waitFor(t, "serve to journal the changes", 20*time.Second, func() bool { return len(ours(t, base+"oai", from)) == 2 })
	// The journal is written before the documents sync reads: sync until
	// the mirror has the change.
	waitFor(t, "the mirror to get the changes", 20*time.Second, func() bool {
		syncOnce()
		_, err := os.Stat(filepath.Join(dest, "f2.txt"))
		b, _ := os.ReadFile(filepath.Join(dest, "f1.txt"))
		return string(b) == "v2, longer" && os.IsNotExist(err)
	})
	waitFor(t, "the mirror's provider to see the changes", 20*time.Second, func() bool { return len(ours(t, mirror, from)) == 2 })
	inc := ours(t, mirror, from)
	if inc["oai:127.0.0.1:f2.txt"].status != "deleted" || inc["oai:127.0.0.1:f1.txt"].dcIdentifier != base+"f1.txt" {
		t.Errorf("incremental from the mirror: %v", inc)
	}
	same(t, "catmandu on the mirror", harvestCatmandu(t, mirror, "--from", from), inc)
}

// The downstream half of the round trip: records laid out as serve
// --oai-pmh harvests them, published by serve, mirrored by sync and
// offered by oai serve --mirror --records, are harvested by Catmandu
// under their own identifiers with their own bytes.
func TestOAIServeMirrorRecords(t *testing.T) {
	syncLoopbackOnly(t)
	dir, dest := t.TempDir(), t.TempDir()
	ids := []string{"oai:arXiv.org:2101.00001", "oai:repo:a/b c", "oai:repo:x%y"}
	meta := map[string]string{}
	for i, id := range ids {
		p := filepath.Join(dir, filepath.FromSlash(harvest.RecordPath(id, "oai_dc")))
		os.MkdirAll(filepath.Dir(p), 0o755)
		meta[id] = fmt.Sprintf(`<oai_dc:dc xmlns:oai_dc="http://www.openarchives.org/OAI/2.0/oai_dc/" xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>record %d</dc:title></oai_dc:dc>`, i)
		os.WriteFile(p, []byte(meta[id]), 0o644)
	}
	base, _ := startServe(t, dir)
	if code, o, e := runCLI(t, "sync", base, dest); code != 0 {
		t.Fatalf("sync: %d %s %s", code, o, e)
	}
	addr := freeAddr(t)
	o, _ := background(t, "oai", "serve", "--mirror", "--records", "--addr", addr, dest)
	waitFor(t, "oai serve --mirror --records", 20*time.Second, func() bool { return strings.Contains(o.String(), "serving OAI-PMH") })
	out, err := exec.Command("catmandu", "convert", "OAI", "--url", "http://"+addr+"/", "--metadataPrefix", "oai_dc", "--handler", "raw", "to", "JSON").Output()
	if err != nil {
		t.Fatalf("catmandu: %v\n%s", err, out)
	}
	var recs []struct {
		ID       string `json:"_identifier"`
		Metadata string `json:"_metadata"`
	}
	if err := json.Unmarshal(out, &recs); err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(ids) {
		t.Fatalf("catmandu harvested %d records: %s", len(recs), out)
	}
	titleRE := regexp.MustCompile(`<dc:title>[^<]*</dc:title>`)
	for _, r := range recs {
		want, ok := meta[r.ID]
		if !ok || titleRE.FindString(r.Metadata) != titleRE.FindString(want) {
			t.Errorf("record %s: %s", r.ID, r.Metadata)
		}
	}
}
