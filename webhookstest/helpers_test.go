package webhookstest_test

import "fmt"

var (
	sprintf = fmt.Sprintf
	sprint  = fmt.Sprint
)
