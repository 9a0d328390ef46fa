package payloads

import "forgehooks.dev/forgehooks/internal/jsonscan"

// installationPath is where a delivery names its installation's id.
var installationPath = []jsonscan.Path{{"installation", "id"}}

// InstallationID returns the id of the app installation a delivery is for,
// its top-level "installation" member's "id", read in one pass over body
// without decoding it: an app needs it first, to choose the installation's
// token, whatever the event. ok is false when body is not one JSON object,
// has no installation (a repository's own webhook), or the id is not an
// integer. A duplicate member counts as in a typed decode: the last one.
func InstallationID(body []byte) (id int64, ok bool) {
	var res [1]jsonscan.Result
	if jsonscan.Lookup(body, installationPath, res[:]) != nil {
		return 0, false
	}
	return res[0].Int64(body)
}
