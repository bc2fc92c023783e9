package source

import (
	"bufio"
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/npmtest"
)

// ldesMember matches the type triple of a member as ldes-client prints it
// (N-Triples, one member a paragraph): version IRI and activity type.
var ldesMember = regexp.MustCompile(`^<([^>]*)> <http://www\.w3\.org/1999/02/22-rdf-syntax-ns#type> <https://www\.w3\.org/ns/activitystreams#(\w+)> \.$`)

// ldesObject matches a member's object triple.
var ldesObject = regexp.MustCompile(`^<([^>]*)> <https://www\.w3\.org/ns/activitystreams#object> <([^>]*)> \.$`)

// runLDESClient runs the real ldes-client (npm 0.3.0) on url with args
// and returns the members it printed as "Type path" in print order.
func runLDESClient(t *testing.T, bin, url, base string, args ...string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, append([]string{url}, args...)...).Output()
	if err != nil {
		t.Fatalf("ldes-client %v: %v\n%s", args, err, out)
	}
	return parseMembers(string(out), base)
}

func parseMembers(out, base string) []string {
	types, objects := map[string]string{}, map[string]string{}
	var order []string
	for _, line := range strings.Split(out, "\n") {
		if m := ldesMember.FindStringSubmatch(line); m != nil {
			if _, ok := types[m[1]]; !ok {
				order = append(order, m[1])
			}
			types[m[1]] = m[2]
		} else if m := ldesObject.FindStringSubmatch(line); m != nil {
			objects[m[1]] = strings.TrimPrefix(m[2], base)
		}
	}
	var ms []string
	for _, v := range order {
		ms = append(ms, types[v]+" "+objects[v])
	}
	return ms
}

// TestLDESClient replicates the served LDES with the real ldes-client:
// every member, in ascending and unordered modes; a resumed run (its
// saved state) gets only the members added since; --follow sees a change.
func TestLDESClient(t *testing.T) {
	bin := npmtest.Bin(t, "ldes-client", "0.3.0", "ldes-client")
	src, base, dir := feedSource(t)
	url := base + ".resourcesync/default/feed/ldes.ttl"
	all := []string{"Create a.txt", "Create b%20c.txt", "Create d/e.html", "Create f.png"}
	// Unordered, then ascending with a saved state: every member.
	got := runLDESClient(t, bin, url, base, "-o", "none")
	if slices.Sort(got); !slices.Equal(got, all) {
		t.Errorf("unordered: got %q, want %q", got, all)
	}
	state := filepath.Join(t.TempDir(), "state")
	got = runLDESClient(t, bin, url, base, "-s", state, "-o", "ascending")
	if slices.Sort(got); !slices.Equal(got, all) { // the baseline's members share one timestamp
		t.Fatalf("ascending: got %q, want %q", got, all)
	}
	write(t, dir, "a.txt", "changed")
	write(t, dir, "g.txt", "new")
	if _, err := src.Update(context.Background()); err != nil {
		t.Fatal(err)
	}
	got = runLDESClient(t, bin, url, base, "-s", state)
	slices.Sort(got)
	if want := []string{"Create g.txt", "Update a.txt"}; !slices.Equal(got, want) {
		t.Errorf("resumed run: got %q, want %q", got, want)
	}

	// --follow: the client stays; a change made while it runs reaches it.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, url, "-f", "--poll-interval", "200", "-o", "ascending")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); cmd.Wait() }()
	lines := make(chan string, 1024)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var seen strings.Builder
	wait := func(want string) {
		t.Helper()
		deadline := time.After(45 * time.Second)
		for {
			if slices.Contains(parseMembers(seen.String(), base), want) {
				return
			}
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("ldes-client --follow ended before %q; saw %q\n%s", want, parseMembers(seen.String(), base), stderr.String())
				}
				seen.WriteString(l + "\n")
			case <-deadline:
				t.Fatalf("ldes-client --follow did not see %q; saw %q", want, parseMembers(seen.String(), base))
			}
		}
	}
	wait("Create g.txt")
	write(t, dir, "h.txt", "followed")
	if _, err := src.Update(context.Background()); err != nil {
		t.Fatal(err)
	}
	wait("Create h.txt")
}
