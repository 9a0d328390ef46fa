package inbox

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	code := m.Run()
	stopSharedCluster()
	os.Exit(code)
}
