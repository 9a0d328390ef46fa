// Package payloads holds the typed payloads of every webhook event the forge
// sends, generated from the schema in schema/ (see cmd/genpayloads): one struct
// per event and action (IssuesOpenedEvent), a sealed interface per event with
// actions (IssuesEvent) with a type for actions the schema does not know
// (IssuesUnknownEvent), one struct per event without actions (PushEvent), and the
// shared types, enums and unions they use.
//
// Typed handlers are registered with the generated On… helpers on anything that
// has the emitter's On method, such as a *webhooks.Webhooks:
//
//	payloads.OnIssuesOpenedEvent(wh, func(ctx context.Context, e payloads.Event[*payloads.IssuesOpenedEvent]) error {
//		...
//	})
//
// A delivery's payload is decoded at most once, however many typed handlers it
// has, and only when one of them runs. Parse decodes a payload without an
// emitter. EmitterEventNames lists every event and event.action name.
//
// A handler may keep its payload, or any part of it, for as long as it likes:
// nothing reuses a decoded value. Its strings are substrings of the delivery's
// body rather than values of their own: of the body itself for a delivery the
// webhooks middleware read (emitter.Event.PayloadOwned; no handler may modify
// a payload's bytes), and of one copy of it for Parse and for a payload given
// to Receive, whose caller may reuse its buffer. So a kept string keeps the
// body alive; a body over 256 KiB gets strings of their own instead.
//
// Every struct has nil-safe getters for the members handlers reach for
// (GetAction, GetInstallation, GetRepository, GetSender, GetOrganization,
// GetEnterprise) and for each optional scalar, which returns the value or its
// zero value (GetMerged() bool for Merged *bool), so that a chain such as
// p.GetRepository().GetDescription() needs no nil check. InstallationID finds a
// delivery's installation id without decoding it.
//
// Decoding is lossless: members the schema does not know are kept (see
// UnknownMembers), timestamps keep their text, and absent members stay absent, so
// that encoding a decoded payload gives the original document back, up to members
// that are null on one side and absent on the other. The generated UnmarshalJSON
// and MarshalJSON methods read and write JSON directly, without reflection.
//
// The generated types are declared in internal packages, a few thousand
// declarations each, so that compiling them takes little memory; this package
// names every one of them by an alias (type PushEvent = …), which is the same
// type under this package's name. Their fields, methods and docs are the
// generated declarations'; go doc shows them under the package that declares
// them, and %T and reflect print them as payloads.PushEvent.
package payloads
