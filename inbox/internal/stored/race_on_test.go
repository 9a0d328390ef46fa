//go:build race

package stored

// raceEnabled: the race detector makes sync.Pool drop what it is given,
// so allocation counts are not this package's.
const raceEnabled = true
