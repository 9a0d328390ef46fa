module forgehooks.dev/forgehooks/examples/chi

go 1.26.0

require (
	forgehooks.dev/forgehooks v0.0.0
	github.com/go-chi/chi/v5 v5.5.0
)

replace forgehooks.dev/forgehooks => ../..
