package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"forgehooks.dev/forgehooks/signing"
)

func cmdVerify(ctx context.Context, c *cli, args []string) int {
	fs := newFlagSet(c, "verify", "forgehooks verify --secret S --signature SIG [file | -]", `
Check the payload's signature: prints "valid" and exits 0, or prints "invalid"
and exits 1. The payload is the file given, or stdin, byte for byte.`)
	secretF := fs.secretFlag()
	sig := fs.String("signature", "", `the signature to check: "sha256=<64 hex digits>" (required)`)
	sha1 := fs.Bool("sha1", false, `accept a legacy "sha1=" signature (X-Hub-Signature) too`)
	pos, secret, code, done := fs.parseWithSecret(args, secretF)
	if done {
		return code
	}
	if *sig == "" {
		return fs.usageError("--signature is required: the X-Hub-Signature-256 header's value")
	}
	body, code, ok := fs.readPayload(pos)
	if !ok {
		return code
	}
	verify := signing.Verify
	if *sha1 && strings.HasPrefix(*sig, "sha1=") {
		verify = signing.VerifySHA1
	}
	valid, err := verify(secret, body, *sig)
	if errors.Is(err, signing.ErrMissingPayload) {
		return fs.fail("the payload is empty")
	}
	if !valid {
		fmt.Fprintln(c.stdout, "invalid")
		if !strings.HasPrefix(*sig, "sha256=") && !*sha1 {
			fmt.Fprintln(c.stderr, `forgehooks verify: a signature starts with "sha256=" (use --sha1 for a legacy "sha1=" one)`)
		}
		return exitFailure
	}
	fmt.Fprintln(c.stdout, "valid")
	return exitOK
}
