module forgehooks.dev/forgehooks/bench

go 1.26.0

replace forgehooks.dev/forgehooks => ../

require (
	forgehooks.dev/forgehooks v0.0.0-00010101000000-000000000000
	github.com/go-playground/webhooks/v6 v6.4.0
	github.com/google/go-github/v75 v75.0.0
)

require github.com/google/go-querystring v1.1.0 // indirect
