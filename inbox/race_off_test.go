//go:build !race

package inbox

const raceEnabled = false
