// Command typed is the typed-payload side of compilecost: it verifies a
// delivery's signature and decodes its payload into the generated type, as a
// receiver with typed handlers does. It is built, not run.
package main

import (
	"fmt"
	"io"
	"os"

	"forgehooks.dev/forgehooks/payloads"
	"forgehooks.dev/forgehooks/signing"
)

func main() {
	body, err := io.ReadAll(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if ok, err := signing.Verify(os.Getenv("SECRET"), body, os.Getenv("SIGNATURE")); err != nil || !ok {
		fmt.Fprintln(os.Stderr, "signature does not match")
		os.Exit(1)
	}
	p, err := payloads.Parse(os.Getenv("EVENT"), body)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if push, ok := p.(*payloads.PushEvent); ok {
		fmt.Println(push.Ref, push.GetRepository().FullName)
	}
}
