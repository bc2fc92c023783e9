module github.com/resourcesync-go/resourcesync

go 1.26.0

require (
	github.com/fsnotify/fsnotify v1.9.0
	github.com/google/go-cmp v0.7.0
	github.com/urfave/cli/v3 v3.6.2
	go.etcd.io/bbolt v1.4.3
	golang.org/x/sys v0.49.0
	golang.org/x/term v0.47.0
	golang.org/x/time v0.14.0
)
