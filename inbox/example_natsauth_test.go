package inbox_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"forgehooks.dev/forgehooks/inbox"
)

// An inbox in a NATS cluster that requires a credentials file and TLS with
// the operator's own CA. The URLs carry no secret: a user and password
// would come from the environment instead (NATSAuth.User, Password).
func ExampleNATSAuth() {
	// The inbox key, shared by every receiver and worker of this inbox:
	// hex in a file of mode 0600 (openssl rand -hex 32).
	key, err := inbox.ReadKeyFile("/etc/forgehooks/inbox.key")
	if err != nil {
		log.Fatal(err)
	}
	in, err := inbox.Open(context.Background(), inbox.Options{
		URLs: []string{"tls://nats-a.internal:4222", "tls://nats-b.internal:4222", "tls://nats-c.internal:4222"},
		Auth: inbox.NATSAuth{
			CredsFile: "/etc/forgehooks/nats.creds",
			TLSCA:     "/etc/forgehooks/nats-ca.pem",
		},
		Key: key,
	})
	if err != nil {
		// The error names the files, and the URLs with any userinfo
		// redacted (inbox.RedactURL).
		log.Print(err)
		os.Exit(1)
	}
	defer in.Close(context.Background())
}

func ExampleRedactURL() {
	fmt.Println(inbox.RedactURL("nats://hooks:s3cret@nats-a:4222,nats://nats-b:4222"))
	// Output: nats://redacted@nats-a:4222,nats://nats-b:4222
}
