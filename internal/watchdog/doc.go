// Package watchdog abandons HTTP responses that stall or trickle.
//
// A response can send its headers and then nothing, or one byte a
// second: a client waiting for it, under a context that only a person's
// Ctrl-C ends, waits forever. A Watch cancels the request's context when
// no byte arrives for Limits.Idle (headers included) or when, over a
// window of Limits.Window, fewer than Limits.MinRate bytes per second
// arrived; Err then says which, as an error matching ErrStalled or
// ErrTooSlow. Both are transient: callers retry them.
package watchdog
