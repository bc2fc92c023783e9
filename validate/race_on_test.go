//go:build race

package validate

// raceEnabled tells tests that scan very large documents that the race
// detector slows them about tenfold.
const raceEnabled = true
