module github.com/resourcesync-go/resourcesync

go 1.26

require (
	github.com/google/go-cmp v0.7.0
	github.com/urfave/cli/v3 v3.6.2
	golang.org/x/time v0.14.0
)
