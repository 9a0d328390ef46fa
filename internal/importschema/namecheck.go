package importschema

import (
	"fmt"
	"unicode/utf8"
)

// maxEnumValues bounds the values of one enum: the published spec's largest
// has a few hundred; a spec with more is not one the forge publishes, and
// each value becomes a Go constant.
const maxEnumValues = 10000

// checkName fails for a name (a member key, an event, an enum value, which
// the generator turns into Go names and YAML keys) that no forge sends and
// no Go name could come from: invalid UTF-8, a control character (NUL
// included) or a byte order mark. what says which name it is.
func checkName(what, where, s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("%w: %s: %s %q is not valid UTF-8", errSpec, where, what, s)
	}
	for i, r := range s {
		switch {
		case r < 0x20 || r >= 0x7f && r < 0xa0:
			return fmt.Errorf("%w: %s: %s %q has a control character (U+%04X) at byte %d", errSpec, where, what, s, r, i)
		case r == 0xfeff:
			return fmt.Errorf("%w: %s: %s %q has a byte order mark (U+FEFF) at byte %d", errSpec, where, what, s, i)
		}
	}
	return nil
}
