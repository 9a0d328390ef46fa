package embedded

import "github.com/nats-io/nats-server/v2/server"

// Running returns the server running now, nil while restarting or after
// Shutdown: for what only the server itself can tell (its tracing of each
// protocol message, in the inbox's tests). A Restart replaces it.
func (s *Server) Running() *server.Server {
	if l := s.cur.Load(); l != nil {
		return l.ns
	}
	return nil
}
