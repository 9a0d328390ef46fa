//go:build !race

package proxy

// raceEnabled: the race detector's shadow memory inflates the RSS bounds.
const raceEnabled = false
