package inbox

import (
	"reflect"

	"forgehooks.dev/forgehooks/internal/jsonscan"
	"forgehooks.dev/forgehooks/webhooks"
)

// ingest is what the one pass over a delivery's body at Enqueue found: what
// a list shows (kept in the stored headers) and the order key.
type ingest struct {
	action, repository, sender string
	key                        string // "" outside any order
}

// ingestPaths are the values every Enqueue looks for: the top-level action
// (top bit 0), then metaPaths.
var ingestPaths = []jsonscan.Path{{"action"}, metaPaths[0], metaPaths[1]}

// keyPaths is how a built-in OrderKey finds its key: key makes it from
// what Lookup found at paths.
type keyPaths struct {
	paths []jsonscan.Path
	key   func(body []byte, res []jsonscan.Result) string
}

// prefixed is the key of the integer at the first of the paths found, after
// its prefix.
func prefixed(prefixes []string) func([]byte, []jsonscan.Result) string {
	return func(body []byte, res []jsonscan.Result) string { return keyOf(body, res, prefixes) }
}

// builtinKey returns the paths of a built-in OrderKey, so that Enqueue's one
// pass finds the key too; ok is false for nil and for a caller's own func.
func builtinKey(k OrderKey) (kp keyPaths, ok bool) {
	if k == nil {
		return keyPaths{}, false
	}
	switch reflect.ValueOf(k).Pointer() {
	case reflect.ValueOf(ByRepository).Pointer():
		return keyPaths{repositoryPath, prefixed(subjectPrefixes[5:])}, true
	case reflect.ValueOf(ByInstallation).Pointer():
		return keyPaths{installationPath, prefixed(installationPrefixes)}, true
	case reflect.ValueOf(BySubject).Pointer():
		return keyPaths{subjectPaths, subjectKey}, true
	}
	return keyPaths{}, false
}

// scanBody checks that d.Payload is one JSON object and, in the same pass,
// finds what the stored headers keep and the key of a built-in OrderBy (a
// caller's own OrderBy is called after, with the body known valid). So every
// caller of Enqueue gets the check, and the workers trust what was stored.
// The error wraps webhooks.ErrInvalidPayload.
func (in *Inbox) scanBody(d webhooks.Delivery) (ingest, error) {
	var paths [3 + 6]jsonscan.Path
	n := copy(paths[:], ingestPaths)
	kp, builtin := builtinKey(in.opts.OrderBy)
	n += copy(paths[n:], kp.paths)
	var res [len(paths)]jsonscan.Result
	if err := jsonscan.LookupTop(d.Payload, paths[:n], 1, res[:n]); err != nil {
		return ingest{}, jsonscan.InvalidPayload(webhooks.ErrInvalidPayload, d.Name, d.ID, err)
	}
	body := d.Payload
	g := ingest{action: res[0].String(body), repository: res[1].String(body), sender: res[2].String(body)}
	switch {
	case builtin:
		g.key = kp.key(body, res[3:n])
	case in.opts.OrderBy != nil:
		g.key = in.opts.OrderBy(d)
	}
	return g, nil
}
