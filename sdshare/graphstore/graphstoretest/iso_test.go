package graphstoretest

import "testing"

func TestIsomorphic(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b string
		want bool
	}{
		{"equal ground", `<http://e/a> <http://e/p> "1" .`, `<http://e/a> <http://e/p> "1" .`, true},
		{"different literal", `<http://e/a> <http://e/p> "1" .`, `<http://e/a> <http://e/p> "2" .`, false},
		{"language differs", `<http://e/a> <http://e/p> "1"@en .`, `<http://e/a> <http://e/p> "1"@de .`, false},
		{"datatype differs", `<http://e/a> <http://e/p> "1"^^<http://e/d> .`, `<http://e/a> <http://e/p> "1" .`, false},
		{"renamed blank nodes", "<http://e/a> <http://e/p> _:x .\n_:x <http://e/p> _:y .", "<http://e/a> <http://e/p> _:m .\n_:m <http://e/p> _:n .", true},
		{"merged vs distinct", "<http://e/a> <http://e/p> _:x .\n<http://e/b> <http://e/p> _:x .", "<http://e/a> <http://e/p> _:x .\n<http://e/b> <http://e/p> _:y .", false},
		{"blank vs IRI", "<http://e/a> <http://e/p> _:x .", "<http://e/a> <http://e/p> <http://e/x> .", false},
		{"duplicates ignored", "<http://e/a> <http://e/p> _:x .\n<http://e/a> <http://e/p> _:x .", "<http://e/a> <http://e/p> _:y .", true},
		// Two 3-cycles vs one 6-cycle: every node looks alike locally,
		// only the search tells them apart.
		{"two triangles vs hexagon",
			"_:a <http://e/p> _:b .\n_:b <http://e/p> _:c .\n_:c <http://e/p> _:a .\n_:d <http://e/p> _:e .\n_:e <http://e/p> _:f .\n_:f <http://e/p> _:d .",
			"_:a <http://e/p> _:b .\n_:b <http://e/p> _:c .\n_:c <http://e/p> _:d .\n_:d <http://e/p> _:e .\n_:e <http://e/p> _:f .\n_:f <http://e/p> _:a .", false},
		{"triangles relabelled",
			"_:a <http://e/p> _:b .\n_:b <http://e/p> _:c .\n_:c <http://e/p> _:a .\n_:d <http://e/p> _:e .\n_:e <http://e/p> _:f .\n_:f <http://e/p> _:d .",
			"_:1 <http://e/p> _:2 .\n_:5 <http://e/p> _:6 .\n_:2 <http://e/p> _:3 .\n_:3 <http://e/p> _:1 .\n_:4 <http://e/p> _:5 .\n_:6 <http://e/p> _:4 .", true},
		{"bnode-closure.nt with itself relabelled", BnodeClosure, "<http://psi.test.no/1> <http://psi.test.no/foo> \"blah\" .\n<http://psi.test.no/1> <http://psi.test.no/child> _:q .\n_:q <http://psi.test.no/foo> \"meh\" .\n_:q <http://www.w3.org/2002/07/owl#sameAs> <http://psi.test.no/2> .\n_:q <http://psi.test.no/child> _:r .\n_:r <http://psi.test.no/foo> \"bar\" .", true},
		{"empty", "", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Isomorphic(NT(tc.a), NT(tc.b)); got != tc.want {
				t.Errorf("Isomorphic = %v, want %v", got, tc.want)
			}
			if got := Isomorphic(NT(tc.b), NT(tc.a)); got != tc.want {
				t.Errorf("Isomorphic (swapped) = %v, want %v", got, tc.want)
			}
		})
	}
}
