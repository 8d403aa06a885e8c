package proxy

import (
	"fmt"
	"io"
	"log/slog"
)

// NewLogger is serve's logger: slog text or json records (format, from
// --log-format) at level and above (--log-level: debug, info, warn,
// error), written to w.
func NewLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	ho := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, ho)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, ho)), nil
	default:
		return nil, fmt.Errorf("--log-format must be text or json")
	}
}
