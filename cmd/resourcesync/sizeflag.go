package main

import (
	"strconv"

	"github.com/urfave/cli/v3"

	"github.com/resourcesync-go/resourcesync/internal/httpclient"
	"github.com/resourcesync-go/resourcesync/internal/units"
)

// SizeFlag is a flag of bytes that takes IEC units ("256MiB", "1.5 GiB")
// as well as plain bytes, through units.ParseBytes: every size flag of the
// tool reads sizes one way. cmd.Int64 reads it.
type SizeFlag = cli.FlagBase[int64, cli.NoConfig, sizeValue]

// RateFlag is a flag of bytes per second with IEC units ("512KiB",
// "1 MiB/s"), through units.ParseRate. cmd.Float reads it.
type RateFlag = cli.FlagBase[float64, cli.NoConfig, rateValue]

type sizeValue struct{ p *int64 }

func (sizeValue) Create(v int64, p *int64, _ cli.NoConfig) cli.Value {
	*p = v
	return &sizeValue{p}
}

func (sizeValue) ToString(v int64) string { return sizeString(v) }

func (s *sizeValue) Set(text string) error {
	n, err := units.ParseBytes(text)
	if err != nil {
		return err
	}
	*s.p = n
	return nil
}

func (s *sizeValue) Get() any { return *s.p }

func (s *sizeValue) String() string {
	if s == nil || s.p == nil {
		return ""
	}
	return sizeString(*s.p)
}

// sizeString prints a default the way a user may type it back: exact IEC
// units when the size is a whole number of them, plain bytes otherwise.
func sizeString(n int64) string {
	if n > 0 {
		for _, u := range []struct {
			name string
			b    int64
		}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
			if n%u.b == 0 {
				return strconv.FormatInt(n/u.b, 10) + u.name
			}
		}
	}
	return strconv.FormatInt(n, 10)
}

type rateValue struct{ p *float64 }

func (rateValue) Create(v float64, p *float64, _ cli.NoConfig) cli.Value {
	*p = v
	return &rateValue{p}
}

func (rateValue) ToString(v float64) string { return sizeString(int64(v)) }

func (r *rateValue) Set(text string) error {
	n, err := units.ParseRate(text)
	if err != nil {
		return err
	}
	*r.p = n
	return nil
}

func (r *rateValue) Get() any { return *r.p }

func (r *rateValue) String() string {
	if r == nil || r.p == nil {
		return ""
	}
	return sizeString(int64(*r.p))
}

// bwlimitFlag is --bwlimit: bytes per second with IEC units, "off", or
// rclone's timetable ("08:00,512KiB 19:00,off"), read by
// httpclient.ParseBWLimit.
type bwlimitFlag = cli.FlagBase[httpclient.BWLimit, cli.NoConfig, bwlimitValue]

// newBWLimitFlag is --bwlimit of sync, aggregate and sdshare sync; --rate
// stays requests per second.
func newBWLimitFlag() cli.Flag {
	return &bwlimitFlag{Name: "bwlimit", Usage: "download at most `RATE` bytes/s in all (512KiB)"}
}

// bandwidth returns the shared limiter of cmd's --bwlimit (nil: none).
func bandwidth(cmd *cli.Command) *httpclient.Bandwidth {
	b, _ := cmd.Value("bwlimit").(httpclient.BWLimit)
	return httpclient.NewBandwidth(b)
}

type bwlimitValue struct{ p *httpclient.BWLimit }

func (bwlimitValue) Create(v httpclient.BWLimit, p *httpclient.BWLimit, _ cli.NoConfig) cli.Value {
	*p = v
	return &bwlimitValue{p}
}

func (bwlimitValue) ToString(v httpclient.BWLimit) string { return v.String() }

func (b *bwlimitValue) Set(text string) error {
	v, err := httpclient.ParseBWLimit(text)
	if err != nil {
		return err
	}
	*b.p = v
	return nil
}

func (b *bwlimitValue) Get() any { return *b.p }

func (b *bwlimitValue) String() string {
	if b == nil || b.p == nil {
		return ""
	}
	return b.p.String()
}
