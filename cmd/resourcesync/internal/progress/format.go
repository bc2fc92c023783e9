package progress

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/resourcesync-go/resourcesync/destination"
	"github.com/resourcesync-go/resourcesync/internal/units"
)

// prefix starts every line, so that a log can be grepped by set.
func prefix(set string) string {
	if set == "" {
		return "sync: "
	}
	return "sync " + clean(set) + ": "
}

// lineFor formats the line that Lines, Bars and Quiet print for e.
func lineFor(e destination.Event) string {
	var b strings.Builder
	b.WriteString(prefix(e.Set))
	detail := func(s string) {
		if s != "" {
			b.WriteString(": " + clean(s))
		}
	}
	switch e.Kind {
	case destination.EventPlan:
		b.WriteString(clean(e.Mode))
		if e.Total >= 0 {
			b.WriteString(", " + group(e.Total) + " resources")
		}
		if e.TotalBytes >= 0 {
			b.WriteString(", " + formatBytes(e.TotalBytes))
		}
	case destination.EventFailed:
		b.WriteString("failed " + clean(or(e.URI, e.Path)))
		detail(e.Error)
	case destination.EventDeleted:
		b.WriteString("deleted " + clean(or(e.Path, e.URI)))
		detail(e.Message)
	case destination.EventKept:
		b.WriteString("kept " + clean(or(e.Path, e.URI)))
		detail(e.Message)
	case destination.EventVanished:
		b.WriteString("vanished " + clean(or(e.Path, e.URI)))
		detail(e.Message)
	case destination.EventAudit:
		b.WriteString("audit " + clean(e.Status) + " " + clean(or(e.Path, e.URI)))
		detail(e.Message)
	default: // phase, done, and kinds added later
		b.WriteString(clean(or(e.Message, e.Kind)))
	}
	b.WriteByte('\n')
	return b.String()
}

// notesElided is printed once when a kind of line reaches its limit.
func notesElided(e destination.Event) string {
	what := e.Kind
	if e.Kind == destination.EventAudit {
		what = "audit findings"
	}
	return prefix(e.Set) + "further " + what + " not listed (the totals are in the summary)\n"
}

// statusLocked formats the Bars status line to fit in width columns.
func (r *Renderer) statusLocked(width int) string {
	done := r.handledLocked() - r.base
	files, bps, rateOK := r.rateLocked()

	var left []string
	if r.set != "" {
		left = append(left, clean(r.set))
	}
	if r.setMode != "" {
		left = append(left, clean(r.setMode))
	}
	// Fixed widths for the count and percentage keep the bar from shifting
	// as the numbers grow.
	count := group(done)
	known := r.total > 0
	var frac float64
	if r.total >= 0 {
		t := group(r.total)
		count = pad(count, len(t)) + "/" + t
	}
	if known {
		frac = min(float64(done)/float64(r.total), 1)
		count += " " + pad(strconv.Itoa(int(frac*100)), 3) + "%"
	}
	left = append(left, count)

	size := formatBytes(r.bytes.Load())
	if r.totalBytes > 0 {
		size += "/" + formatBytes(r.totalBytes)
	}
	right := []string{size}
	if rateOK {
		right = append(right, formatRate(files), units.Rate(bps))
		if known && files > 0 && done < r.total {
			if eta, ok := formatETA(float64(r.total-done) / files); ok {
				right = append(right, "ETA "+eta)
			}
		}
	}
	if f := r.failed.Load(); f > 0 {
		right = append(right, group(f)+" failed")
	}
	if t := r.retries.Load(); t > 0 {
		right = append(right, plural(t, "retry", "retries"))
	}

	avail := width - 1 // never the last column: the terminal would wrap and \r would redraw the wrong line
	l := strings.Join(left, " ")
	b := ""
	if n := min(30, avail/5); known && n >= 10 {
		b = " " + bar(frac, n)
	}
	fits := func() bool {
		return utf8.RuneCountInString(l)+len(b)+2+utf8.RuneCountInString(strings.Join(right, "  ")) <= avail
	}
	// Drop whole fields from the right rather than cut one in the middle,
	// and the bar before the last of them.
	for len(right) > 1 && !fits() {
		right = right[:len(right)-1]
	}
	if !fits() {
		b = ""
	}
	return truncate(l+b+"  "+strings.Join(right, "  "), avail)
}

func pad(s string, n int) string {
	if len(s) < n {
		return strings.Repeat(" ", n-len(s)) + s
	}
	return s
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return group(n) + " " + many
}

// bar draws a bar n columns wide, brackets included, filled to frac.
func bar(frac float64, n int) string {
	inner := n - 2
	full := int(frac * float64(inner))
	var b strings.Builder
	b.WriteByte('[')
	b.WriteString(strings.Repeat("=", full))
	if full < inner {
		b.WriteByte('>')
		b.WriteString(strings.Repeat(" ", inner-full-1))
	}
	b.WriteByte(']')
	return b.String()
}

func truncate(s string, n int) string {
	if n < 0 {
		n = 0
	}
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for range n {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return s[:i]
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// clean replaces control characters, which could move the cursor, break
// the status line or carry escape sequences from a hostile Source.
func clean(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return '?'
		}
		return r
	}, s)
}

// group formats n with thousands separators: 10,000.
func group(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := n < 0
	if neg {
		s = s[1:]
	}
	if len(s) <= 3 {
		if neg {
			return "-" + s
		}
		return s
	}
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	head := len(s) % 3
	if head == 0 {
		head = 3
	}
	b.WriteString(s[:head])
	for i := head; i < len(s); i += 3 {
		b.WriteByte(',')
		b.WriteString(s[i : i+3])
	}
	return b.String()
}

// formatBytes: IEC units, as in the summaries, pages and logs.
func formatBytes(n int64) string { return units.Bytes(n) }

func formatRate(perSec float64) string {
	if perSec < 10 {
		return strconv.FormatFloat(perSec, 'f', 1, 64) + "/s"
	}
	return group(int64(perSec+0.5)) + "/s"
}

// formatETA formats a number of seconds as m:ss or h:mm:ss; ok is false
// for estimates too far off to be worth showing.
func formatETA(sec float64) (string, bool) {
	if sec < 0 || sec > 100*3600 {
		return "", false
	}
	t := int64(sec + 0.5)
	h, m, s := t/3600, t/60%60, t%60
	if h > 0 {
		return strconv.FormatInt(h, 10) + ":" + pad2(m) + ":" + pad2(s), true
	}
	return strconv.FormatInt(m, 10) + ":" + pad2(s), true
}

func pad2(n int64) string {
	if n < 10 {
		return "0" + strconv.FormatInt(n, 10)
	}
	return strconv.FormatInt(n, 10)
}
