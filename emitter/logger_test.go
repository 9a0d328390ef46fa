package emitter

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestNilLoggerIsSlogDefault: without Options.Logger the Emitter logs through
// slog.Default() as it is when it logs, warnings and errors only.
func TestNilLoggerIsSlogDefault(t *testing.T) {
	var buf bytes.Buffer
	old := slog.Default()
	t.Cleanup(func() { slog.SetDefault(old) })
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))

	log := New(Options{}).Logger().With("k", "v")
	log.Debug("debug line")
	log.Info("info line")
	log.Warn("warn line")
	log.WithGroup("g").Error("error line", "a", 1)
	out := buf.String()
	for _, want := range []string{"msg=\"warn line\" k=v", "msg=\"error line\" k=v g.a=1"} {
		if !strings.Contains(out, want) {
			t.Errorf("the default logger's output lacks %q:\n%s", want, out)
		}
	}
	for _, not := range []string{"debug line", "info line"} {
		if strings.Contains(out, not) {
			t.Errorf("the default logger passed on %q:\n%s", not, out)
		}
	}
	given := slog.New(slog.DiscardHandler)
	if New(Options{Logger: given}).Logger() != given {
		t.Error("Logger() is not Options.Logger")
	}
}
