package main

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/resourcesync-go/resourcesync/internal/httpclient"
)

// TestSizeFlags: every flag of bytes (or bytes per second) takes IEC
// units and plain bytes, parsed one way (units.ParseBytes), and refuses
// a decimal unit with a message that names the units it takes. A new
// integer flag whose help speaks of bytes fails the test until it is a
// SizeFlag or RateFlag.
func TestSizeFlags(t *testing.T) {
	want := []string{
		"aggregate --bwlimit",
		"hub --max-payload",
		"publish --dump-part-size",
		"publish --oai-min-free",
		"sdshare receive --max-bytes",
		"sdshare receive --max-memory",
		"sdshare sync --bwlimit",
		"sdshare sync --max-snapshot-bytes",
		"sdshare sync --min-rate",
		"serve --dump-part-size",
		"serve --oai-min-free",
		"sync --bwlimit",
		"sync --min-rate",
	}
	type sized struct {
		path []string
		name string
	}
	var found []sized
	var got []string
	walkCommands(setUpApp(t), func(path []string, c *cli.Command) {
		for _, f := range c.Flags {
			name := f.Names()[0]
			switch f := f.(type) {
			case *SizeFlag, *RateFlag, *bwlimitFlag:
				found = append(found, sized{path, name})
				got = append(got, strings.Join(path, " ")+" --"+name)
			case *cli.Int64Flag, *cli.IntFlag, *cli.Uint64Flag, *cli.FloatFlag:
				if u := strings.ToLower(f.(cli.DocGenerationFlag).GetUsage()); strings.Contains(u, "byte") {
					t.Errorf("%s --%s speaks of bytes: make it a SizeFlag or RateFlag", strings.Join(path, " "), name)
				}
			}
		}
	})
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("size flags:\n got %q\nwant %q", got, want)
	}
	for _, s := range found {
		where := strings.Join(s.path, " ") + " --" + s.name
		for _, tc := range []struct {
			value string
			want  float64
		}{{"256MiB", 256 << 20}, {"1.5 GiB", 3 << 29}, {"4096", 4096}, {"512k", 512 << 10}} {
			app := newApp(&bytes.Buffer{}, &bytes.Buffer{})
			args := append(append([]string{"resourcesync"}, s.path...), "--"+s.name, tc.value, "--help")
			if err := app.Run(context.Background(), args); err != nil {
				t.Errorf("%s %s: %v", where, tc.value, err)
				continue
			}
			var v any
			walkCommands(app, func(path []string, c *cli.Command) {
				if slices.Equal(path, s.path) {
					v = c.Value(s.name)
				}
			})
			var n float64
			switch v := v.(type) {
			case int64:
				n = float64(v)
			case float64:
				n = v
			case httpclient.BWLimit:
				n = v.At(time.Now())
			}
			if n != tc.want {
				t.Errorf("%s %s = %v, want %v", where, tc.value, v, tc.want)
			}
		}
		var stderr bytes.Buffer
		code := run(context.Background(), append(append([]string{"resourcesync"}, s.path...), "--"+s.name, "256MB", "--help"), &bytes.Buffer{}, &stderr)
		if code != exitUsage || !strings.Contains(stderr.String(), "KiB, MiB") {
			t.Errorf("%s 256MB: exit %d, %q; want exit %d naming the units", where, code, stderr.String(), exitUsage)
		}
	}
}
