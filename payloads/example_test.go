package payloads_test

import (
	"context"
	"encoding/json"
	"fmt"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/payloads"
)

func Example() {
	em := emitter.New(emitter.Options{})
	payloads.OnIssuesOpenedEvent(em, func(ctx context.Context, e payloads.Event[*payloads.IssuesOpenedEvent]) error {
		fmt.Println("issue", e.Payload.Issue.Number, "opened, delivery", e.ID)
		return nil
	})
	payloads.OnIssuesEvent(em, func(ctx context.Context, e payloads.Event[payloads.IssuesEvent]) error {
		switch p := e.Payload.(type) {
		case *payloads.IssuesOpenedEvent:
			fmt.Println("an opened issue:", p.Issue.Title)
		case *payloads.IssuesUnknownEvent: // an action the schema does not know yet
			fmt.Println("new action", p.Action, len(p.Raw), "bytes")
		}
		return nil
	})
	for _, body := range []string{
		`{"action":"opened","issue":{"number":7,"title":"Crash on start"}}`,
		`{"action":"teleported","issue":{"number":7}}`,
	} {
		if err := em.Receive(context.Background(), emitter.Event{ID: "d-1", Name: "issues", Payload: []byte(body)}); err != nil {
			fmt.Println(err)
		}
	}
	// Unordered output:
	// issue 7 opened, delivery d-1
	// an opened issue: Crash on start
	// new action teleported 44 bytes
}

func ExampleParse() {
	body := []byte(`{"ref":"refs/heads/main","commits":[],"repository":{"id":1,"created_at":1557933565},"x_new":{"a":1}}`)
	p, err := payloads.Parse("push", body)
	if err != nil {
		fmt.Println(err)
		return
	}
	push := p.(*payloads.PushEvent)
	fmt.Println(payloads.PayloadName(p), push.Ref, push.Repository.CreatedAt)
	for _, m := range payloads.UnknownMembers(push) {
		fmt.Println("unknown member", m.Key, string(m.Value))
	}
	out, _ := json.Marshal(push) // the same members and values, in the schema's order
	fmt.Println(string(out))

	p, _ = payloads.Parse("time_travel", []byte(`{"action":"beamed"}`))
	fmt.Printf("%T %s\n", p, payloads.PayloadName(p))

	_, err = payloads.Parse("push", []byte(`{"ref":1}`))
	fmt.Println(err)
	// Output:
	// push refs/heads/main 2019-05-15T15:19:25Z
	// unknown member x_new {"a":1}
	// {"commits":[],"ref":"refs/heads/main","repository":{"id":1,"created_at":1557933565},"x_new":{"a":1}}
	// *payloads.UnknownEvent time_travel.beamed
	// payloads: decoding PushEvent at .ref (byte 7): want string, got number
}

func ExampleEmitterEventNames() {
	names := payloads.EmitterEventNames()
	fmt.Println(names[0], names[1])
	fmt.Println(payloads.IsKnownEventName("issues.opened"), payloads.IsKnownEventName("issues.teleported"))
	// Output:
	// branch_protection_configuration branch_protection_configuration.disabled
	// true false
}
