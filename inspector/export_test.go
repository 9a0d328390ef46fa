package inspector

// DropPages drops every live page's stream, as the fan-out does to a page
// that falls behind; for the tests of the page's recovery.
func (in *Inspector) DropPages() {
	in.hub.mu.Lock()
	defer in.hub.mu.Unlock()
	for c := range in.hub.clients {
		delete(in.hub.clients, c)
		close(c.gone)
		in.hub.drops.Add(1)
	}
}

// Unexported helpers, reached by the external tests.
var (
	ShellQuote     = shellQuote
	Commands       = commands
	DeriveTypeName = deriveTypeName
)
