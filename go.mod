module github.com/resourcesync-go/resourcesync

go 1.26

require golang.org/x/time v0.14.0
