module forgehooks.dev/forgehooks

go 1.26.0

require (
	github.com/dave/jennifer v1.7.1 // indirect
	github.com/google/go-cmp v0.7.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)
