package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v3"

	"github.com/resourcesync-go/resourcesync/internal/filter"
)

// filterHelp is the part of the help topic "mirroring" about sync's
// filters and --force (and aggregate lines', which take the same).
const filterHelp = `--include GLOB and --exclude GLOB (repeatable) and --filter-from FILE
choose the paths under the Source that the mirror takes, as rclone's do: the
rules are tried in the order given and the first that matches a path
decides; a path no rule matches is taken, unless an --include was given (then
it is not: naming what to take means taking nothing else). A FILE has one
rule a line, "+ GLOB" to take, "- GLOB" to leave out; blank lines and lines
starting with # or ; are skipped. The path is the resource's under the
Source's base, as in DEST (a --allow-host resource's is _hosts/HOST/PATH).
In a GLOB, * and ? match within one path component ([a-z] classes, \
quotes), a component ** matches any number of them; a GLOB starting with /
is anchored at the base, others match the end of the path at any depth
(*.tmp, cache/*); one ending with / means everything below it. A path left
out is never fetched nor deleted (a file mirrored before stays, whatever the
Source does to it), and --audit does not report it.

--force replaces a file in DEST that resourcesync did not write and that
differs from the Source's (without it: refused, "move it away"): the file
is first kept as NAME.resourcesync-old (a second name for it, so that a
failed download leaves NAME as it was), and when that name is taken already
the file is not replaced and the resource fails, so that nothing is lost.
Into a bucket, the object is copied to KEY.resourcesync-old first, and
replaced only if it is still the version copied. The summary says how many
were replaced; the new files are resourcesync's from then on.`

// ruleFlag is the flag.Value of --include, --exclude and --filter-from:
// all three append to one filter.Rules, in the order given, since the
// first rule that matches decides.
type ruleFlag struct {
	rules   *filter.Rules
	include bool
	file    bool // --filter-from: FILE's rules
}

func (f *ruleFlag) Set(v string) error {
	if f.file {
		b, err := os.Open(v)
		if err != nil {
			return err
		}
		defer b.Close()
		return f.rules.AddFile(b, v)
	}
	return f.rules.Add(f.include, v)
}

func (f *ruleFlag) String() string { return "" }
func (f *ruleFlag) Get() any       { return f.rules }

// filterFlags are sync's --include, --exclude and --filter-from, sharing
// one list of rules.
func filterFlags() []cli.Flag {
	rules := &filter.Rules{}
	return []cli.Flag{
		&cli.GenericFlag{Name: "include", Value: &ruleFlag{rules: rules, include: true}, Usage: "take only paths matching `GLOB` (repeatable)"},
		&cli.GenericFlag{Name: "exclude", Value: &ruleFlag{rules: rules}, Usage: "leave out paths matching `GLOB` (repeatable)"},
		&cli.GenericFlag{Name: "filter-from", Value: &ruleFlag{rules: rules, file: true}, Usage: "read \"+ GLOB\" and \"- GLOB\" lines from `FILE`"},
	}
}

// commandFilter compiles the rules of cmd's filter flags into the
// predicate destination.Options.Include takes (nil: every path).
func commandFilter(cmd *cli.Command) (func(string) bool, error) {
	rf, ok := cmd.Value("include").(*filter.Rules)
	if !ok {
		return nil, nil
	}
	f, err := rf.Filter()
	if err != nil {
		return nil, cli.Exit(fmt.Sprintf("--include/--exclude/--filter-from: %v", err), exitUsage)
	}
	if f.Empty() {
		return nil, nil
	}
	return f.Include, nil
}
