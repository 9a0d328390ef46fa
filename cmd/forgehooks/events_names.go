package main

import "errors"

// eventNames returns the names tuple. Until the generated payloads package has
// EmitterEventNames, it says so.
func eventNames() ([]string, error) {
	return nil, errors.New("the event names are not generated yet (package payloads has no EmitterEventNames)")
}
