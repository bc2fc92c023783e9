package destination_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func serveLoopback(t *testing.T, h func(base string) http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: h(base)}}
	srv.Start()
	t.Cleanup(srv.Close)
	return base
}

// TestLDESRecorded syncs LDES documents we did not write (testdata/ldes,
// see its README): the SEMIC specification's example stream and a stream
// in ldes-client's test form, served from loopback with their hosts
// rewritten, and matches the objects they name.
func TestLDESRecorded(t *testing.T) {
	read := func(name, base string, from ...string) string {
		b, err := os.ReadFile(filepath.Join("testdata", "ldes", name))
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		for _, f := range from {
			s = strings.ReplaceAll(s, f, base)
		}
		return s
	}
	objects := func(w http.ResponseWriter, r *http.Request) bool {
		if strings.HasPrefix(r.URL.Path, "/mrgid/") || strings.HasPrefix(r.URL.Path, "/objects/") {
			w.Write([]byte("object " + r.URL.Path))
			return true
		}
		return false
	}
	t.Run("semic", func(t *testing.T) {
		base := serveLoopback(t, func(base string) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if objects(w, r) {
					return
				}
				if r.URL.Path == "/example.ttl" || r.URL.Path == "/feed" {
					w.Header().Set("Content-Type", "text/turtle")
					w.Write([]byte(read("semic-example.ttl", base, "http://marineregions.org", "https://semiceu.github.io/linkeddataeventstreams")))
					return
				}
				http.NotFound(w, r)
			})
		})
		dest := t.TempDir()
		rep, err := feedSync(t, base+"/example.ttl", dest, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !rep.OK(false, false) {
			t.Fatalf("not OK: %+v", rep.Sets)
		}
		sameFiles(t, destFiles(t, dest), map[string]string{"/mrgid/58739": "object /mrgid/58739", "/mrgid/35127": "object /mrgid/35127"})
	})
	t.Run("ldes-client", func(t *testing.T) {
		base := serveLoopback(t, func(base string) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if objects(w, r) {
					return
				}
				if r.URL.Path == "/0" || r.URL.Path == "/1" {
					w.Header().Set("Content-Type", "text/turtle")
					w.Write([]byte(read("ldes-client-"+r.URL.Path[1:]+".ttl", base, "http://myTree.com")))
					return
				}
				http.NotFound(w, r)
			})
		})
		dest := t.TempDir()
		rep, err := feedSync(t, base+"/0", dest, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !rep.OK(false, false) || rep.Sets[0].Fetched != 3 {
			t.Fatalf("not OK or not 3 fetched: %+v", rep.Sets)
		}
		sameFiles(t, destFiles(t, dest), map[string]string{"/objects/a": "object /objects/a", "/objects/b": "object /objects/b", "/objects/c": "object /objects/c"})
	})
}

// ldesSource serves an LDES in the form of our publisher (package feed):
// the stream at /ldes, nodes of size members at /ldes/node-N linked by
// GreaterThanOrEqualTo relations on as:published, full nodes served as
// immutable, members as:Create/Update/Delete versions of /o/NAME with
// their SHA-256 and length.
type ldesSource struct {
	mu      sync.Mutex
	size    int
	members []string // Turtle of each member
	objects map[string]string
	gets    map[string]int
	base    string
}

func (ls *ldesSource) do(typ, name, body string, at time.Time) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	o := ls.base + "/o/" + name
	m := fmt.Sprintf("<#m%d> a as:%s ; as:object <%s> ; dcterms:isVersionOf <%s> ; as:published %q^^xsd:dateTime", len(ls.members), typ, o, o, at.UTC().Format(time.RFC3339Nano))
	if typ != "Delete" {
		sum := sha256.Sum256([]byte(body))
		m += fmt.Sprintf(" ; schema:contentSize %d ; schema:sha256 %q", len(body), hex.EncodeToString(sum[:]))
		ls.objects["/o/"+name] = body
	} else {
		delete(ls.objects, "/o/"+name)
	}
	ls.members = append(ls.members, m+" .\n")
}

func (ls *ldesSource) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.gets[r.URL.Path]++
	const prefixes = "@prefix tree: <https://w3id.org/tree#> .\n@prefix ldes: <https://w3id.org/ldes#> .\n@prefix as: <https://www.w3.org/ns/activitystreams#> .\n@prefix dcterms: <http://purl.org/dc/terms/> .\n@prefix schema: <http://schema.org/> .\n@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .\n"
	stream := fmt.Sprintf("<%s/ldes> a ldes:EventStream ; ldes:timestampPath as:published ; ldes:versionOfPath dcterms:isVersionOf ; tree:view <%s/ldes/node-0> .\n", ls.base, ls.base)
	nodes := max((len(ls.members)+ls.size-1)/ls.size, 1)
	switch {
	case r.URL.Path == "/ldes":
		w.Header().Set("Content-Type", "text/turtle")
		w.Write([]byte(prefixes + stream))
	case strings.HasPrefix(r.URL.Path, "/ldes/node-"):
		n, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/ldes/node-"))
		if err != nil || n < 0 || n >= nodes {
			http.NotFound(w, r)
			return
		}
		var b strings.Builder
		b.WriteString(prefixes + stream)
		hi := min((n+1)*ls.size, len(ls.members))
		for i := n * ls.size; i < hi; i++ {
			fmt.Fprintf(&b, "<%s/ldes> tree:member <#m%d> .\n", ls.base, i)
		}
		b.WriteString("<> a tree:Node")
		if n < nodes-1 {
			fmt.Fprintf(&b, " ; tree:relation [ a tree:GreaterThanOrEqualToRelation ; tree:node <%s/ldes/node-%d> ; tree:path as:published ; tree:value \"2000-01-01T00:00:00Z\"^^xsd:dateTime ]", ls.base, n+1)
		}
		b.WriteString(" .\n")
		for i := n * ls.size; i < hi; i++ {
			b.WriteString(ls.members[i])
		}
		if hi-n*ls.size == ls.size && n < nodes-1 {
			w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
		}
		w.Header().Set("Content-Type", "text/turtle")
		w.Write([]byte(b.String()))
	default:
		if body, ok := ls.objects[r.URL.Path]; ok {
			w.Write([]byte(body))
			return
		}
		http.NotFound(w, r)
	}
}

// TestLDESSync mirrors an LDES in our publisher's form: every object, then
// only what is new (the immutable nodes read before are not read again),
// deletions applied, digests verified.
func TestLDESSync(t *testing.T) {
	ls := &ldesSource{size: 2, objects: map[string]string{}, gets: map[string]int{}}
	ls.base = serveLoopback(t, func(string) http.Handler { return ls })
	t0 := time.Now().Add(-time.Hour)
	for i := range 5 {
		ls.do("Create", fmt.Sprintf("f%d", i), fmt.Sprintf("v1 of %d", i), t0.Add(time.Duration(i)*time.Second))
	}
	ls.do("Update", "f1", "v2 of 1", t0.Add(10*time.Second))
	dest := t.TempDir()
	rep, err := feedSync(t, ls.base+"/ldes", dest, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK(false, false) || rep.Sets[0].Fetched != 5 {
		t.Fatalf("first run: %+v", rep.Sets)
	}
	sameFiles(t, destFiles(t, dest), ls.objects)

	ls.do("Delete", "f0", "", t0.Add(20*time.Second))
	ls.do("Update", "f3", "v2 of 3", t0.Add(21*time.Second))
	ls.do("Create", "f9", "v1 of 9", t0.Add(22*time.Second))
	ls.mu.Lock()
	clear(ls.gets)
	ls.mu.Unlock()
	rep, err = feedSync(t, ls.base+"/ldes", dest, nil)
	if err != nil {
		t.Fatal(err)
	}
	sameFiles(t, destFiles(t, dest), ls.objects)
	if s := rep.Sets[0]; s.Fetched != 2 || s.Deleted != 1 {
		t.Errorf("second run fetched %d, deleted %d; want 2, 1", s.Fetched, s.Deleted)
	}
	ls.mu.Lock()
	if ls.gets["/ldes/node-0"] != 0 || ls.gets["/ldes/node-1"] != 0 {
		t.Errorf("the second run read immutable nodes again: %v", ls.gets)
	}
	ls.mu.Unlock()

	// A member whose object's bytes contradict its digest fails, and is
	// read again by the next run.
	ls.do("Update", "f2", "v2 of 2", t0.Add(30*time.Second))
	ls.mu.Lock()
	ls.objects["/o/f2"] = "tampered"
	ls.mu.Unlock()
	rep, err = feedSync(t, ls.base+"/ldes", dest, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Sets[0].Failed != 1 {
		t.Errorf("a digest mismatch: failed %d, want 1", rep.Sets[0].Failed)
	}
	ls.mu.Lock()
	ls.objects["/o/f2"] = "v2 of 2"
	ls.mu.Unlock()
	if rep, err = feedSync(t, ls.base+"/ldes", dest, nil); err != nil || !rep.OK(false, false) {
		t.Fatalf("after the fix: %v %+v", err, rep)
	}
	sameFiles(t, destFiles(t, dest), ls.objects)
}
