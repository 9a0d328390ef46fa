package main

import "encoding/json"

// actionOf returns a payload's top-level "action", or "".
func actionOf(body []byte) string {
	var head struct {
		Action string `json:"action"`
	}
	_ = json.Unmarshal(body, &head)
	return head.Action
}
