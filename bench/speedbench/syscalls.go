//go:build linux

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// SyscallStep is one `sync` run under strace -c -f: the system calls per
// file of the mirror's write path (issue 33 asks for them before and after
// each change to it).
type SyscallStep struct {
	Name    string             `json:"name"`
	Files   int                `json:"files"`
	Total   int64              `json:"total_calls"`
	PerFile float64            `json:"calls_per_file"`
	ByKind  map[string]float64 `json:"per_file_by_kind"`
	Seconds float64            `json:"seconds_under_strace"`
}

// syscallsPerFile runs sync (default, --dumps and --no-dump) from base into
// new DESTs under strace -c -f and counts calls per file.
func (b *bench) syscallsPerFile(t *tree, base string) {
	if _, err := exec.LookPath("strace"); err != nil {
		b.logf("  strace is not installed: no system calls per file")
		return
	}
	for _, c := range []struct {
		name, key string
		args      []string
	}{
		{"sync (default: the bulk GET)", "default", nil},
		{"sync --dumps (from the Resource Dump)", "dump", []string{"--dumps"}},
		{"sync --no-dump (Resource List)", "list", []string{"--no-dump"}},
	} {
		name := "strace-" + c.key
		out := filepath.Join(b.logs, name+".strace")
		dest := filepath.Join(b.scratch, "side-"+name)
		argv := append([]string{"strace", "-f", "-c", "-o", out, b.bin, "sync", "--progress", "quiet"}, c.args...)
		p, err := b.run(name, filepath.Join(b.scratch, name+"-cwd"), nil, append(argv, base, dest)...)
		if err != nil {
			b.fail("system calls per file: "+c.name, err)
			continue
		}
		raw, err := os.ReadFile(out)
		if err != nil {
			b.fail("system calls per file: "+c.name, err)
			continue
		}
		total, kinds := parseStraceC(string(raw))
		s := SyscallStep{Name: c.name, Files: t.n, Total: total, PerFile: float64(total) / float64(t.n), ByKind: map[string]float64{}, Seconds: p.Seconds}
		for k, v := range kinds {
			s.ByKind[k] = float64(v) / float64(t.n)
		}
		b.res.Syscalls = append(b.res.Syscalls, s)
		b.logf("  %s under strace: %.1f calls per file", c.name, s.PerFile)
	}
}

// parseStraceC reads the summary table of strace -c: the calls column of
// each syscall line and of the total line.
func parseStraceC(s string) (total int64, kinds map[string]int64) {
	kinds = map[string]int64{}
	for _, l := range strings.Split(s, "\n") {
		f := strings.Fields(l)
		if len(f) < 5 || strings.HasPrefix(f[0], "%") || strings.HasPrefix(f[0], "-") {
			continue
		}
		n, err := strconv.ParseInt(f[3], 10, 64)
		if err != nil {
			continue
		}
		name := f[len(f)-1]
		if name == "total" {
			total = n
			continue
		}
		kinds[name] = n
	}
	return total, kinds
}

// topKinds formats the most frequent calls per file.
func topKinds(m map[string]float64, n int) string {
	type kv struct {
		k string
		v float64
	}
	var all []kv
	for k, v := range m {
		all = append(all, kv{k, v})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].v > all[j].v || all[i].v == all[j].v && all[i].k < all[j].k })
	var parts []string
	for i, e := range all {
		if i == n {
			break
		}
		parts = append(parts, fmt.Sprintf("%s %.2f", e.k, e.v))
	}
	return strings.Join(parts, ", ")
}
