package main

import (
	"context"
	"fmt"

	"forgehooks.dev/forgehooks/signing"
)

func cmdSign(ctx context.Context, c *cli, args []string) int {
	fs := newFlagSet(c, "sign", "forgehooks sign --secret S [file | -]", `
Print the payload's signature, as the forge sends it in X-Hub-Signature-256
("sha256=" and 64 hex digits). The payload is the file given, or stdin; its
bytes are signed exactly as they are, trailing newline included.`)
	secretF := fs.secretFlag()
	pos, secret, code, done := fs.parseWithSecret(args, secretF)
	if done {
		return code
	}
	body, code, ok := fs.readPayload(pos)
	if !ok {
		return code
	}
	sig, err := signing.Sign(secret, body)
	if err != nil {
		return fs.fail("%v", err)
	}
	fmt.Fprintln(c.stdout, sig)
	return exitOK
}
