// Command resourcesync is the ResourceSync toolkit's command line.
//
// Each subcommand lives in its own file and only wires flags to the
// packages that do the work.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/urfave/cli/v3"
)

// Exit codes shared by all subcommands.
const (
	exitOK       = 0
	exitProblems = 1 // the command ran and found errors
	exitUsage    = 2 // bad usage or an I/O failure
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes the command line args and returns the process exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	app := newApp(stdout, stderr)
	err := app.Run(ctx, args)
	lf, _ := app.Metadata["log-file"].(*logFile)
	if err == nil {
		return lf.close(stderr, exitOK)
	}
	// The final line goes to stderr, and to --log-file, which then tells
	// how the run ended.
	errw := lf.also(stderr)
	var ec cli.ExitCoder
	if errors.As(err, &ec) {
		if msg := ec.Error(); msg != "" {
			fmt.Fprintln(errw, "resourcesync:", msg)
		}
		return lf.close(stderr, exitCode(err))
	}
	fmt.Fprintln(errw, "resourcesync:", err)
	return lf.close(stderr, exitUsage)
}

// rootHelp is the root's description: what the toolkit is for and where
// to read more.
const rootHelp = `Publish a directory as a ResourceSync Source (serve, publish), mirror a
Source (sync, aggregate), validate one, run a WebSub hub, bridge OAI-PMH and
SDShare.

Examples:
  resourcesync serve --watch ./collection
  resourcesync sync http://127.0.0.1:8080/ ./mirror
  resourcesync help sync

See also: 'resourcesync COMMAND --help' for a command's options, 'resourcesync
help TOPIC' for a topic (secrets from the environment: help environment); the
same pages are in docs/cli/.`

func newApp(stdout, stderr io.Writer) *cli.Command {
	lf := &logFile{}
	app := &cli.Command{
		Name:        "resourcesync",
		Usage:       "ResourceSync (ANSI/NISO Z39.99-2017) toolkit",
		UsageText:   "resourcesync [--version] COMMAND [options] [arguments]",
		Description: rootHelp,
		Writer:      stdout,
		ErrWriter:   stderr,
		// run maps errors to exit codes; urfave/cli must not call os.Exit.
		ExitErrHandler: func(context.Context, *cli.Command, error) {},
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "version", Aliases: []string{"V"}, Local: true, Usage: "print the version and exit"},
		},
		Metadata:                        map[string]any{"log-file": lf},
		EnableShellCompletion:           true,
		ConfigureShellCompletionCommand: configureCompletion,
		Commands: []*cli.Command{
			validateCommand(),
			withOAIEndpoint(serveCommand()),
			publishCommand(),
			simulateCommand(),
			syncCommand(),
			demoCommand(),
			hubCommand(),
			sdshareCommand(),
			oaiCommand(),
			aggregateCommand(),
			versionCommand(),
		},
	}
	lf.attach(app)
	conventions(app)
	return app
}
