//go:build race

package inbox

// raceEnabled: the race detector slows the inbox's tests several times.
const raceEnabled = true
