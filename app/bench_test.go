package app_test

import (
	"net/http"
	"testing"

	"forgehooks.dev/forgehooks/forgetest"
)

// BenchmarkCachedToken is what a handler pays for its installation's token
// once it is cached, with handlers asking in parallel.
func BenchmarkCachedToken(b *testing.B) {
	e := newEnv(b, true, forgetest.Options{})
	a := e.app(nil)
	if _, _, err := a.InstallationToken(b.Context(), testInstallation, nil); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, _, err := a.InstallationToken(b.Context(), testInstallation, nil); err != nil {
				b.Error(err)
				return
			}
		}
	})
	if n := len(e.forge.Tokens()); n != 1 {
		b.Fatalf("%d tokens issued", n)
	}
}

// BenchmarkComment is one comment through the installation's client to the
// fake forge on 127.0.0.1 (keep-alive), most of which is the fake's own work
// (checking the request and its answer against the REST description).
func BenchmarkComment(b *testing.B) {
	e := newEnv(b, true, forgetest.Options{SecondaryLimit: -1, InstallationRateLimit: 1 << 30})
	c := e.app(nil).InstallationClient(testInstallation)
	b.ReportAllocs()
	for b.Loop() {
		if code, err := e.comment(b.Context(), c, "bench"); err != nil || code != http.StatusCreated {
			b.Fatal(code, err)
		}
	}
}
