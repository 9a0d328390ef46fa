package main

import "forgehooks.dev/forgehooks/payloads"

// eventNames returns the names tuple of the generated payloads package.
func eventNames() ([]string, error) {
	return payloads.EmitterEventNames(), nil
}
