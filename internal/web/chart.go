package web

import (
	"fmt"
	"html/template"
	"math"
	"strings"
	"sync/atomic"
)

// Bar is one bar of a Chart.
type Bar struct {
	Label string  // under the bar, shown for some bars only
	Value float64 // its height
	Title string  // the bar's tooltip; Label and Value when empty
}

// Chart is a server-rendered SVG bar chart: no script, an inline element
// (nothing to fetch), readable by a screen reader (role img, a title and
// a description with the total and the largest bar).
type Chart struct {
	Title string // the accessible name
	Unit  string // what a Value counts ("changes")
	Bars  []Bar
}

// SVG renders the chart.
func (c Chart) SVG() template.HTML {
	const w, h, left, bottom, top = 600.0, 160.0, 40.0, 20.0, 10.0
	maxV, total, maxAt := 0.0, 0.0, -1
	for i, b := range c.Bars {
		total += b.Value
		if b.Value > maxV {
			maxV, maxAt = b.Value, i
		}
	}
	scale := niceCeil(maxV)
	var sb strings.Builder
	esc := template.HTMLEscapeString
	desc := strings.TrimSpace(trimFloat(total)+" "+c.Unit) + " in total"
	if maxAt >= 0 {
		desc += fmt.Sprintf("; most: %s at %s", trimFloat(maxV), c.Bars[maxAt].Label)
	}
	id := chartID.Add(1) // ids unique within a page
	fmt.Fprintf(&sb, `<svg class="chart" viewBox="0 0 %g %g" role="img" aria-labelledby="c%d-t c%d-d" xmlns="http://www.w3.org/2000/svg">`, w, h, id, id)
	fmt.Fprintf(&sb, `<title id="c%d-t">%s</title><desc id="c%d-d">%s</desc>`, id, esc(c.Title), id, esc(desc))
	// axis and the top gridline, labelled
	fmt.Fprintf(&sb, `<line class="axis" x1="%g" y1="%g" x2="%g" y2="%g"/>`, left, h-bottom, w, h-bottom)
	fmt.Fprintf(&sb, `<line class="axis" x1="%g" y1="%g" x2="%g" y2="%g" stroke-dasharray="3 3"/>`, left, top, w, top)
	fmt.Fprintf(&sb, `<text x="%g" y="%g" text-anchor="end">%s</text>`, left-4, top+4, esc(trimFloat(scale)))
	fmt.Fprintf(&sb, `<text x="%g" y="%g" text-anchor="end">0</text>`, left-4, h-bottom)
	n := len(c.Bars)
	if n > 0 {
		slot := (w - left) / float64(n)
		gap := math.Min(2, slot*0.2)
		every := int(math.Ceil(float64(n) / 8)) // at most about 8 labels
		for i, b := range c.Bars {
			x := left + float64(i)*slot + gap/2
			bh := 0.0
			if scale > 0 {
				bh = (h - bottom - top) * b.Value / scale
			}
			title := b.Title
			if title == "" {
				title = fmt.Sprintf("%s: %s %s", b.Label, trimFloat(b.Value), c.Unit)
			}
			fmt.Fprintf(&sb, `<rect class="bar" x="%.2f" y="%.2f" width="%.2f" height="%.2f"><title>%s</title></rect>`,
				x, h-bottom-bh, slot-gap, bh, esc(title))
			if i%every == 0 {
				fmt.Fprintf(&sb, `<text x="%.2f" y="%g" text-anchor="middle">%s</text>`, x+(slot-gap)/2, h-6, esc(b.Label))
			}
		}
	}
	sb.WriteString(`</svg>`)
	return template.HTML(sb.String())
}

var chartID atomic.Uint64

// niceCeil rounds v up to 1, 2 or 5 times a power of ten (0 stays 0).
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 0
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

func trimFloat(v float64) string {
	if v == math.Trunc(v) {
		return Num(int64(v))
	}
	return fmt.Sprintf("%.1f", v)
}
