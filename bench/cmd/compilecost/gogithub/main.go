// Command gogithub is the go-github side of compilecost: it verifies a
// delivery's signature and parses its payload with go-github's webhook
// functions, as its documentation shows. It is built, not run.
package main

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"github.com/google/go-github/v75/github"
)

func main() {
	body, err := io.ReadAll(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	payload, err := github.ValidatePayloadFromBody("application/json", bytes.NewReader(body), os.Getenv("SIGNATURE"), []byte(os.Getenv("SECRET")))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ev, err := github.ParseWebHook(os.Getenv("EVENT"), payload)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if push, ok := ev.(*github.PushEvent); ok {
		fmt.Println(push.GetRef(), push.GetRepo().GetFullName())
	}
}
