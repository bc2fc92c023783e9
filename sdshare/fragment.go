package sdshare

import (
	"errors"
	"fmt"
	"strings"

	"github.com/resourcesync-go/resourcesync/rdf"
)

// ErrOutOfScope is matched by every *ScopeError: statements that are not
// part of the fragments of the resources they came with.
var ErrOutOfScope = errors.New("statements outside the resource's fragment")

// ScopeError is a body or fragment document Split refuses: a statement
// about Subject, which belongs to none of Resources, or (NotSubject) a
// resource of Resources that is the subject of no statement.
type ScopeError struct {
	Resources  []string
	Subject    string // the foreign subject (IRI, or _:label)
	NotSubject bool   // Resources[0] is not a subject at all
}

func (e *ScopeError) Error() string {
	if e.NotSubject {
		msg := "resource " + e.Resources[0] + " is not a subject of the document"
		if e.Subject != "" {
			msg += " (its statements are about " + e.Subject + ")"
		}
		return msg
	}
	return "statement with subject " + e.Subject + " belongs to none of the resources (" + strings.Join(e.Resources, ", ") + ")"
}

func (e *ScopeError) Is(target error) bool { return target == ErrOutOfScope }

// Split divides the triples of a document sent for resources (a pushed
// batch, or a client's fragment of one resource) into the resources'
// fragments (SD-PUSH-8): each resource's statements and, recursively,
// those of the blank nodes they reach (SD-SRV-26). It is the one scoping
// rule of the receiver and the client: every resource must be a subject
// in the body, and every triple must belong to some fragment (SD-PUSH-9),
// so that a document for A cannot write statements about B; otherwise the
// error is a *ScopeError. An empty ts (a deletion) is not for Split.
func Split(ts []rdf.Triple, resources []string) (map[string][]rdf.Triple, error) {
	bySubject := map[rdf.Term][]int{}
	for i, t := range ts {
		bySubject[t.S] = append(bySubject[t.S], i)
	}
	used := make([]bool, len(ts))
	out := map[string][]rdf.Triple{}
	names := uniq(resources)
	for _, name := range names {
		r := rdf.IRI(name)
		if len(bySubject[r]) == 0 {
			e := &ScopeError{Resources: []string{name}, NotSubject: true}
			if len(ts) > 0 {
				e.Subject = subject(ts[0].S)
			}
			return nil, e
		}
		seen := map[rdf.Term]bool{r: true}
		queue := []rdf.Term{r}
		var frag []rdf.Triple
		for len(queue) > 0 {
			s := queue[0]
			queue = queue[1:]
			for _, i := range bySubject[s] {
				used[i] = true
				frag = append(frag, ts[i])
				if o := ts[i].O; o.IsBlank() && !seen[o] {
					seen[o] = true
					queue = append(queue, o)
				}
			}
		}
		out[name] = frag
	}
	for i, u := range used {
		if !u {
			return nil, &ScopeError{Resources: names, Subject: subject(ts[i].S)}
		}
	}
	return out, nil
}

func subject(t rdf.Term) string {
	if t.IsBlank() {
		return fmt.Sprintf("_:%s", t.Value)
	}
	return t.Value
}

func uniq(ss []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
