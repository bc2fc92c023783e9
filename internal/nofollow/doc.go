// Package nofollow opens a file below a directory without following any
// symbolic link (or, on Windows, another reparse point) on the way: the
// one rule every server here applies to the files it publishes, so what
// a scan saw as a file is what is read, never what a link points to.
package nofollow
