package webhooks

// Permanent marks err as final: a handler returns it for a failure that no
// retry can cure (the forge refused the request for good, the delivery names
// something that does not exist). An inbox records the attempt and moves the
// delivery to the dead letters at once instead of retrying it; the
// middleware, inline or not, answers as for any failed handler. The result's
// message is err's, and errors.Is and errors.As see err through it (also
// through the aggregate error of a delivery's handlers). Permanent(nil) is
// nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err}
}

// IsPermanent reports whether err is final: err, or an error it wraps, was
// marked by Permanent or has a method Permanent() bool that returns true
// (the way a package that does not import this one marks its errors). An
// error that wraps several (the aggregate error of a delivery's handlers, or
// errors.Join) is final only when every one of them is: a retry is worth it
// while any failure may heal.
func IsPermanent(err error) bool {
	for err != nil {
		if p, ok := err.(interface{ Permanent() bool }); ok && p.Permanent() {
			return true
		}
		switch u := err.(type) {
		case interface{ Unwrap() []error }:
			errs := u.Unwrap()
			for _, e := range errs {
				if !IsPermanent(e) {
					return false
				}
			}
			return len(errs) > 0
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		default:
			return false
		}
	}
	return false
}

// permanentError is what Permanent returns.
type permanentError struct{ err error }

func (e *permanentError) Error() string   { return e.err.Error() }
func (e *permanentError) Unwrap() error   { return e.err }
func (e *permanentError) Permanent() bool { return true }
