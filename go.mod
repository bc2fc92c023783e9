module github.com/resourcesync-go/resourcesync

go 1.26

require github.com/google/go-cmp v0.7.0
