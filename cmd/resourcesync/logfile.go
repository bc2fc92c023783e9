package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/urfave/cli/v3"
)

// logFileCommands are the long-running commands that take --log-file.
var logFileCommands = [][]string{{"sync"}, {"aggregate"}, {"serve"}, {"hub"}, {"sdshare", "serve"}, {"sdshare", "sync"}, {"simulate"}}

// attach adds --log-file to logFileCommands.
func (l *logFile) attach(app *cli.Command) {
	for _, path := range logFileCommands {
		c := app
		for _, name := range path {
			if c = c.Command(name); c == nil {
				break
			}
		}
		if c == nil {
			continue
		}
		c.Flags = append(c.Flags, logFileFlag())
		prev := c.Before
		c.Before = func(ctx context.Context, cmd *cli.Command) (context.Context, error) {
			if prev != nil {
				var err error
				if ctx, err = prev(ctx, cmd); err != nil {
					return ctx, err
				}
			}
			return l.before(ctx, cmd)
		}
	}
}

func logFileFlag() cli.Flag {
	return &cli.StringFlag{Name: "log-file", TakesFile: true, Usage: "append the log to `FILE` instead of stderr"}
}

// logFile redirects the command's stderr to --log-file for the run.
type logFile struct {
	f *os.File
}

// before opens --log-file (appending, created 0640) and makes it the
// root's ErrWriter, which every command writes its logs through.
func (l *logFile) before(ctx context.Context, cmd *cli.Command) (context.Context, error) {
	p := cmd.String("log-file")
	if p == "" {
		return ctx, nil
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return ctx, cli.Exit(fmt.Sprintf("--log-file: %v", err), exitUsage)
	}
	l.f = f
	cmd.Root().ErrWriter = f
	return ctx, nil
}

// also is stderr, and the log file when there is one.
func (l *logFile) also(stderr io.Writer) io.Writer {
	if l == nil || l.f == nil {
		return stderr
	}
	return io.MultiWriter(stderr, l.f)
}

// close closes the log file and returns code (2 when closing fails: the
// log is incomplete).
func (l *logFile) close(stderr io.Writer, code int) int {
	if l == nil || l.f == nil {
		return code
	}
	err := l.f.Close()
	l.f = nil
	if err != nil {
		fmt.Fprintln(stderr, "resourcesync: --log-file:", err)
		return max(code, exitUsage)
	}
	return code
}
