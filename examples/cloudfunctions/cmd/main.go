// Command cmd serves the function locally as the platform does: FUNCTION_TARGET=ForgeWebhook
// PORT=8080 FORGE_WEBHOOK_SECRET=... go run ./cmd
package main

import (
	"log"
	"os"

	"github.com/GoogleCloudPlatform/functions-framework-go/funcframework"

	_ "forgehooks.dev/forgehooks/examples/cloudfunctions"
)

func main() {
	port := os.Getenv("PORT")
	if port == "" {
		port = "8080"
	}
	if err := funcframework.StartHostPort(os.Getenv("HOST"), port); err != nil {
		log.Fatalf("funcframework.Start: %v", err)
	}
}
