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
	a, _ := samplegen.Payload(s, "issue_relates_to.relates_to_added", 1)
	b, _ := samplegen.Payload(s, "issue_relates_to.relates_to_added", 1)
	fmt.Println(string(a) == string(b), string(a[:28]))
	// Output: true {"action":"relates_to_added"
}
