package rs

import "fmt"

// MarshalText writes the Time as a W3C datetime (empty for the zero Time),
// so that a Time written by a parsed document survives JSON and other text
// encodings exactly (instant, offset and precision).
func (t Time) MarshalText() ([]byte, error) {
	if y := t.t.Year(); t.prec != PrecNone && (y < 0 || y > 9999) {
		return nil, fmt.Errorf("rs: Time.MarshalText: year %d has no W3C datetime form", y)
	}
	return t.AppendFormat(nil), nil
}

// UnmarshalText parses a W3C datetime; empty text is the zero Time.
func (t *Time) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*t = Time{}
		return nil
	}
	v, err := parseTimeBytes(b)
	if err != nil {
		return err
	}
	*t = v
	return nil
}
