module forgehooks.dev/forgehooks/examples/customschema

go 1.26.0

require forgehooks.dev/forgehooks v0.0.0

require (
	github.com/dave/jennifer v1.7.1 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)

tool forgehooks.dev/forgehooks/cmd/genpayloads

replace forgehooks.dev/forgehooks => ../..
