package sdshare

import (
	"errors"
	"strings"
	"testing"

	"github.com/resourcesync-go/resourcesync/rdf"
)

func TestSplitScope(t *testing.T) {
	a, b, p := rdf.IRI("http://x/a"), rdf.IRI("http://x/b"), rdf.IRI("http://x/p")
	for _, tc := range []struct {
		name string
		ts   []rdf.Triple
		want string // "" when accepted
	}{
		{"a and its blank nodes", []rdf.Triple{{S: a, P: p, O: rdf.Blank("1")}, {S: rdf.Blank("1"), P: p, O: b}}, ""},
		{"a statement about b", []rdf.Triple{{S: a, P: p, O: b}, {S: b, P: p, O: a}}, "statement with subject http://x/b belongs to none of the resources (http://x/a)"},
		{"only b", []rdf.Triple{{S: b, P: p, O: a}}, "resource http://x/a is not a subject of the document (its statements are about http://x/b)"},
		{"an unreached blank node", []rdf.Triple{{S: a, P: p, O: b}, {S: rdf.Blank("z"), P: p, O: b}}, "statement with subject _:z belongs"},
	} {
		_, err := Split(tc.ts, []string{"http://x/a"})
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (!errors.Is(err, ErrOutOfScope) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}
