package arena

import (
	"strconv"
	"testing"
)

func TestSlice(t *testing.T) {
	var s Slice[int]
	for i := 0; i < 3<<shift+5; i++ {
		s.Append(i * 3)
	}
	if s.Len() != 3<<shift+5 {
		t.Fatalf("Len = %d", s.Len())
	}
	for i := 0; i < s.Len(); i++ {
		if s.At(i) != i*3 {
			t.Fatalf("At(%d) = %d", i, s.At(i))
		}
	}
}

func TestBytesStable(t *testing.T) {
	var a Bytes
	var views []string
	for i := 0; i < 200000; i++ {
		views = append(views, a.String("doc-"+strconv.Itoa(i)))
	}
	big := a.String(string(make([]byte, 5<<20)))
	if len(big) != 5<<20 {
		t.Fatal("large string truncated")
	}
	for i, v := range views {
		if v != "doc-"+strconv.Itoa(i) {
			t.Fatalf("view %d = %q", i, v)
		}
	}
	if a.String("") != "" {
		t.Fatal("empty string")
	}
}
