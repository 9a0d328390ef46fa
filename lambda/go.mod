module forgehooks.dev/forgehooks/lambda

go 1.26.0

require (
	forgehooks.dev/forgehooks v0.0.0
	github.com/aws/aws-lambda-go v1.55.1
)

replace forgehooks.dev/forgehooks => ../
