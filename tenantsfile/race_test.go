//go:build race

package tenantsfile_test

// raceEnabled: the race detector slows yaml.v3 tenfold, so that tests
// load fewer tenants under it.
const raceEnabled = true
