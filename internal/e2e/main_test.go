package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// evalgateBin is the evalgate binary the multi-process tests run, built
// once by TestMain.
var evalgateBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "evalgate-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	evalgateBin = filepath.Join(dir, "evalgate")
	build := exec.Command("go", "build", "-o", evalgateBin, "github.com/evalgate/evalgate/cmd/evalgate")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build evalgate:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
