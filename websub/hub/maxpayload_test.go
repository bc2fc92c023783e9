package hub

import (
	"math"
	"strings"
	"testing"
)

// TestMaxPayloadLimit: a MaxPayloadBytes past MaxPayloadLimit (hub
// --max-payload 9223372036854775807) is refused with a clear error, not
// taken: its readers' limit (MaxPayloadBytes+1) would overflow to a
// negative one and every fetched topic would read as empty.
func TestMaxPayloadLimit(t *testing.T) {
	for _, n := range []int64{math.MaxInt64, MaxPayloadLimit + 1} {
		c := fastConfig(t.TempDir())
		c.MaxPayloadBytes = n
		if err := c.defaults(); err == nil || !strings.Contains(err.Error(), "MaxPayloadBytes") {
			t.Errorf("MaxPayloadBytes %d: %v, want a refusal", n, err)
		}
	}
	c := fastConfig(t.TempDir())
	c.MaxPayloadBytes = MaxPayloadLimit
	if err := c.defaults(); err != nil {
		t.Errorf("MaxPayloadBytes at the limit: %v", err)
	}
}
