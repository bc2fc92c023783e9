package server

import "golang.org/x/sys/unix"

// retry calls open again while it is interrupted by a signal.
func retry(open func() (int, error)) (int, error) {
	for {
		fd, err := open()
		if err != unix.EINTR {
			return fd, err
		}
	}
}
