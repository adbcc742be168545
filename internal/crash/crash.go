package crash

import "os"

// Now kills the process at once (SIGKILL on Unix, TerminateProcess on
// Windows). It returns only if the system refuses, as syscall.Kill's
// callers did before.
func Now() {
	if self, err := os.FindProcess(os.Getpid()); err == nil {
		_ = self.Kill()
	}
}
