module forgehooks.dev/forgehooks

go 1.26.0

require (
	github.com/dave/jennifer v1.7.1
	github.com/google/go-cmp v0.7.0
	gopkg.in/yaml.v3 v3.0.1
)
