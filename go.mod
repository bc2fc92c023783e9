module github.com/resourcesync-go/resourcesync

go 1.26
