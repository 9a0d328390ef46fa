package gen_test

import (
	"fmt"
	"log"
	"strings"

	"forgehooks.dev/forgehooks/gen"
)

// Generate builds the payload package of a schema in memory; Write puts it on
// disk. Here, the fixture schema's files (one event with actions, one without,
// free-form actions) and where the push event's struct goes.
func ExampleGenerate() {
	s, err := gen.Load("testdata/fixture")
	if err != nil {
		log.Fatal(err)
	}
	files, err := gen.Generate(s, gen.DefaultOptions)
	if err != nil {
		log.Fatal(err)
	}
	for _, f := range files {
		if strings.HasPrefix(f.Name, "internal/events_p/") || !strings.Contains(f.Name, "internal/") {
			fmt.Println(f.Name)
		}
	}
	rec, err := gen.PackagesOf(s)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("push is in", rec.Events["push"])
	// Output:
	// aliases.go
	// internal/events_p/codec.go
	// internal/events_p/events.go
	// internal/events_p/getters.go
	// internal/events_p/parse.go
	// internal/events_p/types.go
	// names.go
	// names/names.go
	// register.go
	// push is in events_p
}
