package catchup

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"forgehooks.dev/forgehooks/internal/clip"
)

// Attempt is one entry of a hook's delivery log: one attempt to deliver one
// delivery (schema "hook-delivery-item" of the REST description). Several
// attempts share a GUID when a delivery was redelivered.
type Attempt struct {
	// ID identifies this attempt; redelivery is asked for by attempt ID.
	ID int64 `json:"id"`
	// GUID is the delivery's id, the X-Forge-Delivery header the receiver saw.
	GUID string `json:"guid"`
	// DeliveredAt is when the forge made the attempt.
	DeliveredAt time.Time `json:"delivered_at"`
	// Redelivery is true for an attempt someone asked for.
	Redelivery bool `json:"redelivery"`
	// Status is the forge's description of the outcome ("OK", "failed to connect").
	Status string `json:"status"`
	// StatusCode is the receiver's HTTP status, 0 when none was received.
	StatusCode int `json:"status_code"`
	// Event is the event name (X-Forge-Event).
	Event string `json:"event"`
	// Action is the payload's action, "" when the event has none.
	Action string `json:"action"`
}

// Succeeded reports whether the receiver answered this attempt with a 2xx: the
// forge counts that as delivered, and the receiver acknowledges only what it
// has handled or stored. (A 3xx is not success: the forge follows no redirect,
// so the payload reached no handler.)
func (a Attempt) Succeeded() bool { return a.StatusCode >= 200 && a.StatusCode <= 299 }

// wireAttempt is an attempt as sent, with pointers to tell a missing field.
type wireAttempt struct {
	ID          *int64  `json:"id"`
	GUID        *string `json:"guid"`
	DeliveredAt *string `json:"delivered_at"`
	Redelivery  *bool   `json:"redelivery"`
	Status      *string `json:"status"`
	StatusCode  *int    `json:"status_code"`
	Event       *string `json:"event"`
	Action      *string `json:"action"`
}

// errMalformed marks a response body that is not what the description says.
var errMalformed = errors.New("malformed response")

// decodeAttempts decodes one page of a delivery log: a JSON array of
// hook-delivery-item objects. Fields the catch-up decides with (id, guid,
// delivered_at, status, status_code, event) must be present and valid; fields
// it does not use may be missing, and unknown fields are ignored, as the
// description allows the forge to add them.
func decodeAttempts(body []byte) ([]Attempt, error) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '[' {
		return nil, fmt.Errorf("%w: delivery list is not a JSON array: %q", errMalformed, clip.String(string(trimmed)))
	}
	var wire []*wireAttempt
	if err := json.Unmarshal(trimmed, &wire); err != nil {
		return nil, fmt.Errorf("%w: delivery list: %v", errMalformed, err)
	}
	out := make([]Attempt, 0, len(wire))
	for i, w := range wire {
		a, err := w.attempt()
		if err != nil {
			return nil, fmt.Errorf("%w: delivery list item %d: %v", errMalformed, i, err)
		}
		out = append(out, a)
	}
	return out, nil
}

func (w *wireAttempt) attempt() (Attempt, error) {
	if w == nil {
		return Attempt{}, errors.New("null instead of an object")
	}
	var missing []string
	if w.ID == nil {
		missing = append(missing, "id")
	}
	if w.GUID == nil {
		missing = append(missing, "guid")
	}
	if w.DeliveredAt == nil {
		missing = append(missing, "delivered_at")
	}
	if w.Status == nil {
		missing = append(missing, "status")
	}
	if w.StatusCode == nil {
		missing = append(missing, "status_code")
	}
	if w.Event == nil {
		missing = append(missing, "event")
	}
	if len(missing) > 0 {
		return Attempt{}, fmt.Errorf("missing %s", strings.Join(missing, ", "))
	}
	if *w.ID <= 0 {
		return Attempt{}, fmt.Errorf("id %d is not positive", *w.ID)
	}
	if *w.GUID == "" || len(*w.GUID) > 256 {
		return Attempt{}, fmt.Errorf("attempt %d: guid of %d bytes", *w.ID, len(*w.GUID))
	}
	at, err := time.Parse(time.RFC3339, *w.DeliveredAt)
	if err != nil {
		return Attempt{}, fmt.Errorf("attempt %d: delivered_at: %v", *w.ID, err)
	}
	if at.IsZero() {
		return Attempt{}, fmt.Errorf("attempt %d: delivered_at is the zero time", *w.ID)
	}
	a := Attempt{ID: *w.ID, GUID: *w.GUID, DeliveredAt: at, Status: *w.Status, StatusCode: *w.StatusCode, Event: *w.Event}
	if w.Redelivery != nil {
		a.Redelivery = *w.Redelivery
	}
	if w.Action != nil {
		a.Action = *w.Action
	}
	return a, nil
}
