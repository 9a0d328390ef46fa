package samplegen_test

import (
	"fmt"

	genmodel "forgehooks.dev/forgehooks/gen/model"
	"forgehooks.dev/forgehooks/internal/samplegen"
)

func ExamplePayload() {
	s, err := genmodel.Load("../../schema")
	if err != nil {
		panic(err)
	}
	a, _ := samplegen.Payload(s, "issues.opened", 1)
	b, _ := samplegen.Payload(s, "issues.opened", 1)
	fmt.Println(string(a) == string(b), string(a[:18]))
	// Output: true {"action":"opened"
}
