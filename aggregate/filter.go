package aggregate

import (
	"fmt"
	"os"
	"strings"

	"github.com/resourcesync-go/resourcesync/internal/filter"
)

// addFilter appends a line's --include, --exclude or --filter-from
// (kind) to its Filters, checked now so that a bad glob or an unreadable
// file is an error of the sources file, not of the Source's first run.
func (s *Source) addFilter(kind, v string) error {
	var rs filter.Rules
	if err := addRule(&rs, kind, v); err != nil {
		return err
	}
	s.Filters = append(s.Filters, kind+" "+v)
	return nil
}

func addRule(rs *filter.Rules, kind, v string) error {
	switch kind {
	case "include", "exclude":
		return rs.Add(kind == "include", v)
	case "filter-from":
		f, err := os.Open(v)
		if err != nil {
			return err
		}
		defer f.Close()
		return rs.AddFile(f, v)
	}
	return fmt.Errorf("unknown filter %q", kind)
}

// Filter compiles the line's Filters as sync compiles its flags: one
// list of rules in the order given, first match wins, an --include
// leaving out what no rule names (package internal/filter). A
// --filter-from file is read each time, so an edit of it takes effect at
// the Source's next run. nil: every path.
func (s *Source) Filter() (func(string) bool, error) {
	if len(s.Filters) == 0 {
		return nil, nil
	}
	var rs filter.Rules
	for _, x := range s.Filters {
		kind, v, _ := strings.Cut(x, " ")
		if err := addRule(&rs, kind, v); err != nil {
			return nil, fmt.Errorf("--%s: %w", kind, err)
		}
	}
	f, err := rs.Filter()
	if err != nil {
		return nil, err
	}
	return f.Include, nil
}
