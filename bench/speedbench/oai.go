//go:build linux

package main

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// oai measures row (k) through bench/oaibench: an OAI-PMH harvest of
// -oai-n records published as a ResourceSync Source, beside the raw
// ListRecords download of the same run.
func (b *bench) oai(root string) {
	w := fmt.Sprintf("OAI-PMH harvest + publish (`publish --oai-pmh`), %s records, first run", commas(float64(b.cfg.NOAI)))
	target := ">= 5,000 records/s"
	if b.cfg.Skip["oai"] || b.cfg.NOAI <= 0 {
		b.res.Rows = append(b.res.Rows, notRun("k", w, target, "skipped"))
		return
	}
	b.logf("\n== (k) OAI-PMH harvest, %s records ==", commas(float64(b.cfg.NOAI)))
	args := []string{"-n", strconv.Itoa(b.cfg.NOAI), "-bin", b.bin}
	out, err := b.delegate(root, "oaibench", args...)
	var o oaiRows
	if err == nil {
		o, err = parseOAI(string(out))
	}
	if err != nil {
		b.fail("(k) OAI-PMH", err)
		b.res.Rows = append(b.res.Rows, notRun("k", w, target, firstLine(err.Error())))
		return
	}
	b.res.Rows = append(b.res.Rows, Row{ID: "k", Workload: w, Ratio: o.harvest / 5000, Status: verdict(o.harvest >= 5000),
		Figure:   fmt.Sprintf("%s records/s (%.2fx the raw list); incremental run %s records/s; mirror's baseline %s records/s", commas(o.harvest), o.harvest/o.raw, commas(o.incremental), commas(o.sync)),
		Baseline: fmt.Sprintf("raw ListRecords download %s records/s", commas(o.raw)), Target: target,
		Note: "bench/oaibench " + strings.Join(args[:2], " ") + ": local provider (internal/testing/oaitest), pages of 500"})
	b.logf("  harvest + publish %s records/s (raw list %s)", commas(o.harvest), commas(o.raw))
}

type oaiRows struct{ raw, harvest, incremental, sync float64 }

var oaiLine = regexp.MustCompile(`^(.*?):\s+[0-9.]+ s\s+([0-9.]+) records/s`)

// parseOAI reads oaibench's lines by their labels.
func parseOAI(s string) (oaiRows, error) {
	var o oaiRows
	for _, l := range strings.Split(s, "\n") {
		m := oaiLine.FindStringSubmatch(strings.TrimSpace(l))
		if m == nil {
			continue
		}
		v, _ := strconv.ParseFloat(m[2], 64)
		switch label := m[1]; {
		case strings.HasPrefix(label, "raw ListRecords"):
			o.raw = v
		case strings.HasPrefix(label, "harvest + publish"):
			o.harvest = v
		case strings.HasPrefix(label, "incremental"):
			o.incremental = v
		case strings.HasPrefix(label, "Destination baseline"):
			o.sync = v
		}
	}
	if o.raw <= 0 || o.harvest <= 0 {
		return o, fmt.Errorf("oaibench: no raw or harvest rate in its output:\n%s", s)
	}
	return o, nil
}
