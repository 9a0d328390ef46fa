package forgefunction

import "os"

// getenv reads the function's configuration; tests replace it.
var getenv = os.Getenv
