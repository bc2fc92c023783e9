package source

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/pgtest"
	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source/publish"
	"github.com/resourcesync-go/resourcesync/source/store"
	"github.com/resourcesync-go/resourcesync/source/store/memstore"
	"github.com/resourcesync-go/resourcesync/source/store/pgstore"
	"github.com/resourcesync-go/resourcesync/source/store/storetest"
)

// docs returns the files of a document tree.
func docs(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		rel, b, err := readDoc(dir, p)
		if err == nil {
			out[rel] = b
		}
		return nil
	})
	return out
}

// readDoc reads the document stored at p below dir, by its path relative
// to dir: a Resource List stored compressed (NAME.xml.gz, serve's tree)
// decoded, under the name NAME.xml it is served at.
func readDoc(dir, p string) (string, []byte, error) {
	rel, _ := filepath.Rel(dir, p)
	rel = filepath.ToSlash(rel)
	b, err := os.ReadFile(p)
	if err != nil {
		return rel, nil, err
	}
	if x, ok := strings.CutSuffix(rel, ".xml"+publish.GzipSuffix); ok {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return rel, nil, err
		}
		b, err = io.ReadAll(zr)
		return x + ".xml", b, err
	}
	return rel, b, nil
}

func sameDocs(a, b map[string][]byte) bool {
	if len(a) != len(b) || a[".resourcesync/default/resourcelist.xml"] == nil {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || !bytes.Equal(v, w) {
			return false
		}
	}
	return true
}

type replica struct {
	src    *Source
	cancel context.CancelFunc
	done   chan error
}

// opener opens a handle on a set's shared state.
type opener func(ctx context.Context, set string) (store.Store, error)

func memOpener(db *memstore.DB) opener {
	return func(_ context.Context, set string) (store.Store, error) { return db.Open(set), nil }
}

func startReplica(t *testing.T, open opener, dir, state string) *replica {
	t.Helper()
	src, err := Open(Config{BaseURL: "http://127.0.0.1:1/", Sets: []SetConfig{{Name: "default", Dir: dir}}, StateDir: state,
		OpenStore: open,
		Dumps:     true, Archives: true, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if _, err := src.Update(ctx); err != nil {
		t.Fatal(err)
	}
	r := &replica{src: src, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- src.Run(ctx, RunOptions{RescanInterval: 50 * time.Millisecond}) }()
	t.Cleanup(r.stop)
	return r
}

// stop ends the replica as a crash would for its peers: its role is freed
// (memstore: on Close) and it writes nothing more.
func (r *replica) stop() {
	if r.cancel == nil {
		return
	}
	r.cancel()
	<-r.done
	r.src.Close()
	r.cancel = nil
}

// urls counts the entries of the replica's Resource List.
func urls(t *testing.T, r *replica) int {
	return bytes.Count(docs(t, r.src.Out())[".resourcesync/default/resourcelist.xml"], []byte("<url>"))
}

func (r *replica) leads() bool {
	_, ok := r.src.sets[0].leads()
	return ok
}

// TestReplicasTakeOver: two Sources on one shared state (memstore, and
// PostgreSQL where it can run) and one directory: one scans, both serve
// identical documents; the scanner stops, the directory changes, the other
// takes over and the journal continues.
func TestReplicasTakeOver(t *testing.T) {
	t.Run("memstore", func(t *testing.T) { testTakeOver(t, memOpener(memstore.New())) })
	t.Run("pgstore", func(t *testing.T) {
		url := pgtest.Database(t)
		testTakeOver(t, func(ctx context.Context, set string) (store.Store, error) { return pgstore.Open(ctx, url, set, nil) })
	})
}

func testTakeOver(t *testing.T, open opener) {
	dir := t.TempDir()
	for i := range 20 {
		write(t, dir, filepath.Join("d", string(rune('a'+i))), "v1")
	}
	a := startReplica(t, open, dir, t.TempDir())
	b := startReplica(t, open, dir, t.TempDir())
	if !a.src.Shared() {
		t.Fatal("a memstore Source is not shared")
	}
	until := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); !ok(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}
	// Identical and listing every file: both render an empty list before
	// either leads, and a leader stopped before its first scan would leave
	// the takeover a baseline (no journal records) instead.
	until("identical documents", func() bool { return sameDocs(docs(t, a.src.Out()), docs(t, b.src.Out())) && urls(t, a) == 20 })
	if a.leads() == b.leads() {
		t.Fatalf("leads: a %v, b %v; want exactly one", a.leads(), b.leads())
	}
	leader, other := a, b
	if b.leads() {
		leader, other = b, a
	}
	for p := range docs(t, a.src.Out()) {
		if filepath.Ext(p) == ".zip" || bytes.Contains([]byte(p), []byte("archive")) {
			t.Errorf("%s: dumps and archives should be off on replicas", p)
		}
	}

	leader.stop()
	// Renamed into place: the new leader may scan at any moment, and a
	// file caught between truncate and write would be journaled twice.
	writeAtomic(t, dir, "d/new", "new")
	writeAtomic(t, dir, "d/a", "v2 longer")
	os.Remove(filepath.Join(dir, "d", "b"))
	st := other.src.Store("default")
	start := time.Now()
	until("the other replica to take over and journal the changes", func() bool {
		s, _ := st.Stats(context.Background())
		return other.leads() && s.LastSeq >= 3
	})
	t.Logf("takeover and journal in %v", time.Since(start).Round(time.Millisecond))
	var kinds []rs.Change
	for c, err := range st.Journal(context.Background(), 0) {
		if err != nil {
			t.Fatal(err)
		}
		if c.Seq != uint64(len(kinds)+1) {
			t.Errorf("journal seq %d at position %d", c.Seq, len(kinds)+1)
		}
		kinds = append(kinds, c.Kind)
	}
	if len(kinds) != 3 {
		t.Errorf("journal %v, want exactly 3 records (created, updated, deleted)", kinds)
	}
	if err := storetest.CheckReplay(context.Background(), st); err != nil {
		t.Error(err)
	}
	// A new replica in the stopped one's place renders the same tree.
	c := startReplica(t, open, dir, t.TempDir())
	until("the new replica's documents", func() bool { return sameDocs(docs(t, c.src.Out()), docs(t, other.src.Out())) })
	cl := docs(t, c.src.Out())[".resourcesync/default/changelist.xml"]
	if !bytes.Contains(cl, []byte("changelists/")) {
		t.Errorf("change list index: %s", cl)
	}
}

func testLogger() *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return slog.New(slog.DiscardHandler)
}

// TestReplicaLosesRole: a leader whose role is lost (its connection broke;
// memstore.Lose) stops writing at once, renders what the new leader
// publishes, and leads again when that one stops.
func TestReplicaLosesRole(t *testing.T) {
	dir := t.TempDir()
	for i := range 10 {
		write(t, dir, filepath.Join("d", string(rune('a'+i))), "v1")
	}
	db := memstore.New()
	a := startReplica(t, memOpener(db), dir, t.TempDir())
	b := startReplica(t, memOpener(db), dir, t.TempDir())
	until := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); !ok(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}
	until("identical documents", func() bool { return sameDocs(docs(t, a.src.Out()), docs(t, b.src.Out())) && urls(t, a) == 10 })
	leader, other := a, b
	if b.leads() {
		leader, other = b, a
	}
	ctx := context.Background()
	st := db.Open("default") // an observer's handle
	defer st.Close()
	lastSeq := func() uint64 { s, _ := st.Stats(ctx); return s.LastSeq }

	leader.src.Store("default").(*memstore.Store).Lose()
	until("the other replica to lead", func() bool { return other.leads() && !leader.leads() })
	write(t, dir, "d/a", "v2")
	write(t, dir, "d/new", "new")
	until("the changes journaled", func() bool { return lastSeq() >= 2 })
	time.Sleep(300 * time.Millisecond) // several rescan intervals of both
	if n := lastSeq(); n != 2 {
		t.Errorf("journal has %d records after 2 changes: the former leader wrote too", n)
	}
	until("identical documents after the change", func() bool {
		d := docs(t, leader.src.Out())
		return sameDocs(d, docs(t, other.src.Out())) && bytes.Contains(d[".resourcesync/default/resourcelist.xml"], []byte("/d/new<"))
	})

	other.stop()
	until("the former leader to lead again", leader.leads)
	os.Remove(filepath.Join(dir, "d", "b"))
	until("the deletion journaled", func() bool { return lastSeq() == 3 })
	if err := storetest.CheckReplay(ctx, leader.src.Store("default")); err != nil {
		t.Error(err)
	}
}

// writeAtomic writes rel through a hidden temporary file renamed into
// place, so that a concurrent scan sees the old bytes or the new.
func writeAtomic(t *testing.T, dir, rel, body string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	tmp := filepath.Join(filepath.Dir(p), ".tmp-"+filepath.Base(p))
	write(t, dir, filepath.ToSlash(filepath.Join(filepath.Dir(rel), ".tmp-"+filepath.Base(rel))), body)
	if err := os.Rename(tmp, p); err != nil {
		t.Fatal(err)
	}
}
