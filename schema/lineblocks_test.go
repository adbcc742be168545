package schema

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// blocksOf reads every block of in and checks each: whole lines, not
// empty, only the first marked first.
func blocksOf(t *testing.T, in string, size int) (string, error) {
	t.Helper()
	lb := NewLineBlocks(iotest.HalfReader(strings.NewReader(in)), "f", size)
	var all bytes.Buffer
	for i := 0; ; i++ {
		data, buf, first, err := lb.Next()
		if err != nil {
			if _, _, _, again := lb.Next(); again != err {
				t.Fatalf("size %d: Next after %v returns %v", size, err, again)
			}
			return all.String(), err
		}
		if len(data) == 0 || first != (i == 0) {
			t.Fatalf("size %d: block %d has %d bytes, first %v", size, i, len(data), first)
		}
		all.Write(data)
		if more := all.String() != strings.TrimPrefix(in, "\ufeff"); more && data[len(data)-1] != '\n' {
			t.Fatalf("size %d: block %d ends inside a line: %q", size, i, data)
		}
		RecycleBlock(buf)
	}
}

func TestLineBlocks(t *testing.T) {
	long := strings.Repeat("x", 100)
	for _, in := range []string{"", "a", "a\n", "a\nb", "\ufeffq 0 d 1\nq 0 e 2\n", "\n\n\n",
		"one\n" + long + "\nthree\n" + long, "cr\r\nlf\n", "\ufeff"} {
		for _, size := range []int{1, 2, 3, 7, 64, 4096} {
			got, err := blocksOf(t, in, size)
			if err != io.EOF {
				t.Fatalf("%q, size %d: %v", in, size, err)
			}
			if want := strings.TrimPrefix(in, "\ufeff"); got != want {
				t.Fatalf("%q, size %d: blocks hold %q", in, size, got)
			}
		}
	}
}

func TestLineBlocksErrors(t *testing.T) {
	for _, size := range []int{1, 4, 4096} {
		if _, err := blocksOf(t, "a\rb\rc\r", size); !errors.Is(err, ErrLineEnds) {
			t.Errorf("CR-only line ends, size %d: %v", size, err)
		}
	}
	// A reader's error comes through as it is (the block it cut short is
	// not returned, its lines counted before it in the caller's error).
	broken := errors.New("disk on fire")
	lb := NewLineBlocks(io.MultiReader(strings.NewReader("a\nb\n"), iotest.ErrReader(broken)), "f", 4096)
	if _, _, _, err := lb.Next(); err != broken {
		t.Fatalf("got %v, want %v", err, broken)
	}
	lb = NewLineBlocks(io.MultiReader(strings.NewReader("a\nb\n"), iotest.ErrReader(broken)), "f", 2)
	data, _, _, err := lb.Next()
	if err != nil || string(data) != "a\n" {
		t.Fatalf("first block %q, %v", data, err)
	}
	for err == nil {
		_, _, _, err = lb.Next()
	}
	if err != broken {
		t.Fatalf("got %v, want %v", err, broken)
	}
}
