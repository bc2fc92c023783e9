//go:build race

package publish

// raceEnabled: the race detector makes sync.Pool drop items at random,
// so a test of buffer reuse does not count allocations under it.
const raceEnabled = true
