module forgehooks.dev/forgehooks/examples/lambda

go 1.26.0

require (
	forgehooks.dev/forgehooks v0.0.0
	forgehooks.dev/forgehooks/lambda v0.0.0
)

require github.com/aws/aws-lambda-go v1.55.1 // indirect

replace (
	forgehooks.dev/forgehooks => ../..
	forgehooks.dev/forgehooks/lambda => ../../lambda
)
