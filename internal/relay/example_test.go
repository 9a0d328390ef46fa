package relay_test

import (
	"fmt"
	"time"

	"forgehooks.dev/forgehooks/internal/relay"
)

func ExampleParseMessage() {
	data := []byte(`{"x-forge-event":"ping","x-forge-delivery":"d1","x-hub-signature-256":"sha256=...",` +
		`"content-length":"19","body":{"zen":"Keep it"},"bodyB":"eyAiemVuIjogIktlZXAgaXQiIH0=","timestamp":1700000000000}`)
	m, err := relay.ParseMessage(data)
	if err != nil {
		fmt.Println(err)
		return
	}
	sig, _ := m.Signature(false)
	fmt.Println(m.Event(), m.DeliveryID(), sig)
	fmt.Printf("%s from %s, %d bytes as sent\n", m.Body, m.BodySource, m.OriginalLength)
	// Output:
	// ping d1 sha256=...
	// { "zen": "Keep it" } from bodyB, 19 bytes as sent
}

func ExampleBackoff() {
	// Without jitter (u = 0): the stream's retry, doubled per failed attempt,
	// capped at 30 seconds.
	for n := range 7 {
		fmt.Print(relay.Backoff(n, time.Second, 30*time.Second, 0), " ")
	}
	fmt.Println()
	// Output:
	// 1s 2s 4s 8s 16s 30s 30s
}
