package destination

import "syscall"

var syscallENOTDIR = syscall.ENOTDIR
