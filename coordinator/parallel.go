package coordinator

import "runtime"

func defaultParallelism() int { return runtime.GOMAXPROCS(0) }
