package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/urfave/cli/v3"
)

// Set by release builds (scripts/release.sh) with
// -ldflags "-X main.version=v1.2.3 -X main.commit=abc -X main.date=2026-01-02T03:04:05Z";
// otherwise taken from the build info that `go build`/`go install` embed.
var (
	version string
	commit  string
	date    string
)

// buildVersion is what --version and the version command report.
type buildVersion struct {
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	Date      string `json:"date,omitempty"`
	Modified  bool   `json:"modified,omitempty"`
	GoVersion string `json:"go"`
	Platform  string `json:"platform"`
}

// readBuildInfo is replaced by tests.
var readBuildInfo = debug.ReadBuildInfo

func currentVersion() buildVersion {
	v := buildVersion{Version: "(devel)", GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := readBuildInfo(); ok {
		if bi.Main.Version != "" {
			v.Version = bi.Main.Version
		}
		if bi.GoVersion != "" {
			v.GoVersion = bi.GoVersion
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				v.Commit = s.Value
			case "vcs.time":
				v.Date = s.Value
			case "vcs.modified":
				v.Modified = s.Value == "true"
			}
		}
	}
	// A release build's stamp wins over what the toolchain recorded.
	if version != "" {
		v.Version = version
	}
	if commit != "" {
		v.Commit = commit
	}
	if date != "" {
		v.Date = date
	}
	return v
}

func (v buildVersion) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "resourcesync %s", v.Version)
	if v.Commit != "" {
		c := v.Commit
		if len(c) > 12 {
			c = c[:12]
		}
		fmt.Fprintf(&b, " (commit %s", c)
		if v.Modified {
			b.WriteString(", modified")
		}
		if v.Date != "" {
			fmt.Fprintf(&b, ", %s", v.Date)
		}
		b.WriteString(")")
	}
	fmt.Fprintf(&b, " %s %s", v.GoVersion, v.Platform)
	return b.String()
}

func printVersion(w io.Writer) error {
	_, err := fmt.Fprintln(w, currentVersion())
	return err
}

func versionCommand() *cli.Command {
	return &cli.Command{
		Name:      "version",
		Usage:     "print the version, commit, build date and Go version",
		UsageText: "resourcesync version",
		Description: `Prints the module version (or the release's, stamped with -ldflags), the
VCS commit and its time, "modified" when built from a tree with uncommitted
changes, and the Go version and platform. Same as 'resourcesync --version'.`,
		Action: func(_ context.Context, cmd *cli.Command) error {
			if cmd.Args().Present() {
				return usageError(cmd, fmt.Sprintf("unexpected argument %q", cmd.Args().First()))
			}
			return printVersion(cmd.Root().Writer)
		},
	}
}
