package follow

import "time"

// SetPushBackoff shortens the wait before reconnecting the live push.
func SetPushBackoff(d time.Duration) (restore func()) {
	old := pushBackoff
	pushBackoff = d
	return func() { pushBackoff = old }
}
