package stateurl

import "testing"

func TestIsPostgres(t *testing.T) {
	for s, want := range map[string]bool{
		"postgres://u@h/db": true, "postgresql://h/db": true, "POSTGRES://h/db": true,
		"bolt:/x": false, "/x": false, "postgres:x": false, "": false,
	} {
		if got := IsPostgres(s); got != want {
			t.Errorf("IsPostgres(%q) = %v", s, got)
		}
	}
	if r := Redact("postgres://u:pw@h/db"); r != "postgres://u:xxxxx@h/db" {
		t.Errorf("Redact: %q", r)
	}
}
