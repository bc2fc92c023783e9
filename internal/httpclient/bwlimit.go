package httpclient

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/resourcesync-go/resourcesync/internal/units"
)

// BWLimit is a bandwidth limit in bytes per second, as --bwlimit gives it:
// one rate ("512KiB", "off") or rclone's timetable ("08:00,512KiB
// 19:00,off": from each local time of day the rate after it, the last
// entry lasting past midnight until the first). The zero BWLimit is no
// limit.
type BWLimit struct {
	slots []bwSlot // sorted by minute; one with minute -1 when a single rate
}

type bwSlot struct {
	minute int     // minutes after local midnight
	rate   float64 // bytes per second; 0: no limit
}

// ParseBWLimit reads a --bwlimit value.
func ParseBWLimit(s string) (BWLimit, error) {
	fields := strings.Fields(s)
	if len(fields) == 0 {
		return BWLimit{}, fmt.Errorf("--bwlimit %q: want RATE (bytes per second, as 512KiB), off, or a timetable as \"08:00,512KiB 19:00,off\"", s)
	}
	if !strings.Contains(s, ",") {
		r, err := parseBWRate(strings.TrimSpace(s))
		if err != nil {
			return BWLimit{}, err
		}
		return BWLimit{slots: []bwSlot{{minute: -1, rate: r}}}, nil
	}
	var b BWLimit
	for _, f := range fields {
		at, r, ok := strings.Cut(f, ",")
		var h, m int
		if _, err := fmt.Sscanf(at, "%d:%d", &h, &m); !ok || err != nil || len(at) != 5 || h < 0 || h > 23 || m < 0 || m > 59 {
			return BWLimit{}, fmt.Errorf("--bwlimit: %q: want HH:MM,RATE (as 08:00,512KiB or 19:00,off)", f)
		}
		rt, err := parseBWRate(r)
		if err != nil {
			return BWLimit{}, err
		}
		if slices.ContainsFunc(b.slots, func(s bwSlot) bool { return s.minute == h*60+m }) {
			return BWLimit{}, fmt.Errorf("--bwlimit: %s given twice", at)
		}
		b.slots = append(b.slots, bwSlot{minute: h*60 + m, rate: rt})
	}
	slices.SortFunc(b.slots, func(x, y bwSlot) int { return x.minute - y.minute })
	return b, nil
}

func parseBWRate(s string) (float64, error) {
	if strings.EqualFold(s, "off") || s == "0" {
		return 0, nil
	}
	r, err := units.ParseRate(s)
	if err != nil {
		return 0, fmt.Errorf("--bwlimit: %w", err)
	}
	if r < 0 {
		return 0, fmt.Errorf("--bwlimit: %q: a rate is not negative", s)
	}
	return r, nil
}

// At returns the rate in force at t, in bytes per second (0: no limit).
func (b BWLimit) At(t time.Time) float64 {
	if len(b.slots) == 0 {
		return 0
	}
	if b.slots[0].minute < 0 {
		return b.slots[0].rate
	}
	min := t.Hour()*60 + t.Minute()
	r := b.slots[len(b.slots)-1].rate // from yesterday's last entry
	for _, s := range b.slots {
		if s.minute <= min {
			r = s.rate
		}
	}
	return r
}

// IsZero reports whether b never limits.
func (b BWLimit) IsZero() bool {
	return !slices.ContainsFunc(b.slots, func(s bwSlot) bool { return s.rate > 0 })
}

// String gives b back as --bwlimit takes it.
func (b BWLimit) String() string {
	if len(b.slots) == 0 {
		return "off"
	}
	str := func(r float64) string {
		if r == 0 {
			return "off"
		}
		return strings.ReplaceAll(units.Bytes(int64(r)), " ", "")
	}
	if b.slots[0].minute < 0 {
		return str(b.slots[0].rate)
	}
	var parts []string
	for _, s := range b.slots {
		parts = append(parts, fmt.Sprintf("%02d:%02d,%s", s.minute/60, s.minute%60, str(s.rate)))
	}
	return strings.Join(parts, " ")
}

// Bandwidth shares one BWLimit among all the response bodies of a command:
// --bwlimit bounds the command's total, whatever the number of workers, as
// rclone's does. A nil *Bandwidth does not limit.
type Bandwidth struct {
	limit BWLimit
	now   func() time.Time

	mu      sync.Mutex
	current float64
	lim     *rate.Limiter
}

// NewBandwidth returns the shared limiter of b, or nil when b never limits.
func NewBandwidth(b BWLimit) *Bandwidth {
	if b.IsZero() {
		return nil
	}
	return &Bandwidth{limit: b, now: time.Now, lim: rate.NewLimiter(rate.Inf, 0)}
}

// bwChunk is the most one Read takes at once: small enough that the bytes
// flow evenly at low rates, large enough that a read costs little.
const bwChunk = 32 << 10

// limiter returns the limiter for now and the largest read it allows
// (0: none).
func (bw *Bandwidth) limiter() (*rate.Limiter, int) {
	r := bw.limit.At(bw.now())
	bw.mu.Lock()
	defer bw.mu.Unlock()
	if r != bw.current {
		bw.current = r
		if r == 0 {
			bw.lim.SetLimit(rate.Inf)
		} else {
			// The burst, and so the largest read, is at most a tenth of a
			// second's worth: a transfer takes its time from the first byte.
			burst := max(1, min(bwChunk, int(r/10)))
			bw.lim.SetBurst(burst)
			bw.lim.SetLimit(rate.Limit(r))
		}
	}
	if r == 0 {
		return bw.lim, 0
	}
	return bw.lim, bw.lim.Burst()
}

// Reader returns body read at the limit's pace; ctx ends a wait.
func (bw *Bandwidth) Reader(ctx context.Context, body io.ReadCloser) io.ReadCloser {
	if bw == nil {
		return body
	}
	return &bwReader{ctx: ctx, bw: bw, body: body}
}

type bwReader struct {
	ctx  context.Context
	bw   *Bandwidth
	body io.ReadCloser
}

func (r *bwReader) Read(p []byte) (int, error) {
	lim, most := r.bw.limiter()
	if most > 0 && len(p) > most {
		p = p[:most]
	}
	n, err := r.body.Read(p)
	for left := n; left > 0 && most > 0; {
		// In pieces of the burst in force: a timetable may have made it
		// smaller since the read began.
		k := min(left, max(1, lim.Burst()))
		if werr := lim.WaitN(r.ctx, k); werr != nil {
			if err == nil {
				err = werr
			}
			break
		}
		left -= k
	}
	return n, err
}

func (r *bwReader) Close() error { return r.body.Close() }
