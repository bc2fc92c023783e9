package main

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/urfave/cli/v3"
)

// logFormatFlag is --log-format, added by conventions to every command
// that has -v and -q: one switch for the one log format of the tool.
func logFormatFlag() cli.Flag {
	return &cli.StringFlag{Name: "log-format", Value: "text", Usage: "log records as `FORMAT`: text or json",
		Validator: func(s string) error {
			if s != "text" && s != "json" {
				return fmt.Errorf("--log-format %q: want text or json", s)
			}
			return nil
		}}
}

// commandLogger is the one way a command makes its logger: records to w
// in --log-format, at def's level unless -v (debug) or -q (warnings and
// errors only) says otherwise. Every log of every command comes through
// here, so -q and --log-format mean the same everywhere.
func commandLogger(cmd *cli.Command, w io.Writer, def slog.Level) *slog.Logger {
	level := def
	switch {
	case cmd.Bool("verbose"):
		level = slog.LevelDebug
	case cmd.Bool("quiet"):
		level = max(def, slog.LevelWarn)
	}
	opts := &slog.HandlerOptions{Level: level}
	if cmd.String("log-format") == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
