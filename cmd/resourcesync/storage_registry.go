package main

import (
	"context"
	"fmt"

	"github.com/urfave/cli/v3"

	_ "github.com/resourcesync-go/resourcesync/storage/local" // file://
	"github.com/resourcesync-go/resourcesync/storage/s3"
)

// The storages the command opens by location register themselves when
// imported, here: storage/local (file://) and storage/s3 (serve and publish read s3://BUCKET/PREFIX, sync and
// aggregate write into it, publish --out writes its documents into it).

// s3Flags are the flags of every command that opens a bucket. tls adds
// --ca-cert and --insecure for a command that lacks them (sync has them
// already, from clientFlags: there they apply to the Source and the
// endpoint alike).
func s3Flags(tls bool) []cli.Flag {
	f := []cli.Flag{
		&cli.StringFlag{Name: "s3-endpoint", Usage: "S3-compatible server at `URL` (path-style)"},
	}
	if tls {
		f = append(f,
			&cli.StringFlag{Name: "ca-cert", Usage: "also trust the CA certificates in the PEM `FILE`"},
			&cli.BoolFlag{Name: "insecure", Usage: "do not verify server certificates (warned)"},
		)
	}
	return f
}

// storageContext is ctx carrying what the command line says about buckets
// (--s3-endpoint, --ca-cert, --insecure), for storage.OpenContent and
// storage.OpenTarget: one place where the flags become s3.Options. The
// rest comes from the standard AWS chain (AWS_ENDPOINT_URL_S3,
// AWS_PROFILE, …) when the flags are not given.
func storageContext(ctx context.Context, cmd *cli.Command) context.Context {
	has := func(name string) bool {
		for _, f := range cmd.Flags {
			for _, n := range f.Names() {
				if n == name {
					return true
				}
			}
		}
		return false
	}
	var o s3.Options
	if has("s3-endpoint") {
		o.Endpoint = cmd.String("s3-endpoint")
	}
	if has("ca-cert") {
		o.CACertFile = cmd.String("ca-cert")
	}
	if has("insecure") {
		o.Insecure = cmd.Bool("insecure")
	}
	return s3.WithOptions(ctx, o)
}

// warnInsecure warns about --insecure on a command whose only TLS peer is
// a bucket's endpoint (sync warns in clientAuth).
func warnInsecure(cmd *cli.Command) {
	if cmd.Bool("insecure") {
		fmt.Fprintln(cmd.Root().ErrWriter, "warning: --insecure: the S3 endpoint's certificate is not verified; anyone on the path can read and alter what is read and written")
	}
}
