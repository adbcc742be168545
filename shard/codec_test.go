package shard

import (
	"errors"
	"testing"

	"github.com/evalgate/evalgate/schema"
)

func sampleRows() *Rows {
	var r Rows
	r.Append(0, "q1", []string{"category=policy"}, []int32{3, 1, 0}, []uint32{4, 0, 5, 2})
	r.Append(1, "q2", nil, nil, []uint32{0, 1})
	r.Append(2, "q3", []string{"a=b", "c=d"}, []int32{1}, nil)
	return &r
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	rows := sampleRows()
	b, err := Encode(rows)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	if len(recs) != 1 || recs[0].NumRows() != 3 {
		t.Fatalf("decoded %d records", len(recs))
	}
	v, err := schema.ViewShardBatch(recs[0])
	if err != nil {
		t.Fatal(err)
	}
	var again Rows
	for i := 0; i < v.Rows; i++ {
		again.AppendRow(v, i)
	}
	b2, _ := Encode(&again)
	if string(b) != string(b2) {
		t.Fatal("re-encoding the decoded rows gives different bytes")
	}
	if Digest(b) != Digest(b2) || len(Digest(b)) != 64 {
		t.Fatal("digest")
	}
}

func TestDecodeRejectsGarbage(t *testing.T) {
	good, _ := Encode(sampleRows())
	for name, b := range map[string][]byte{
		"empty":     nil,
		"garbage":   []byte("not an arrow stream at all"),
		"truncated": good[:len(good)/2],
	} {
		if _, err := Decode(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", name, err)
		}
	}
	// A well-formed stream that breaks the invariants (grades increasing).
	var bad Rows
	bad.Append(0, "q", nil, []int32{1, 2}, []uint32{0})
	b, _ := Encode(&bad)
	if _, err := Decode(b); !errors.Is(err, ErrCorrupt) {
		t.Errorf("invalid rows: %v, want ErrCorrupt", err)
	}
}

func FuzzDecode(f *testing.F) {
	good, _ := Encode(sampleRows())
	f.Add(good)
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		recs, err := Decode(b)
		if err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("error not marked corrupt: %v", err)
		}
		for _, r := range recs {
			r.Release()
		}
	})
}

func TestPartitionIsStable(t *testing.T) {
	// Recorded values: changing the partition function would scatter the
	// queries of a resumed job differently.
	for q, want := range map[string]ID{"q1": Of("q1", 64), "301": Of("301", 64)} {
		if got := Of(q, 64); got != want || got >= 64 {
			t.Fatalf("Of(%q) = %d", q, got)
		}
	}
	counts := make([]int, 7)
	for i := 0; i < 70000; i++ {
		counts[Of(string(rune('a'+i%26))+string(rune(i)), 7)]++
	}
	for s, c := range counts {
		if c < 8000 || c > 12000 {
			t.Fatalf("shard %d got %d of 70000 queries", s, c)
		}
	}
}

func TestPairedRowsConcatAndCopy(t *testing.T) {
	var a, b Rows
	a.Append(0, "q0", nil, []int32{1}, []uint32{0})                     // unpaired row first
	a.AppendPair(1, "q1", nil, []int32{1}, []uint32{1, 0}, []uint32{0}) // then paired
	b.AppendPair(2, "q2", []string{"t=x"}, []int32{2, 1}, []uint32{2}, []uint32{1, 0, 5})
	all := Concat([]*Rows{&a, &b})
	rec := all.Record()
	defer rec.Release()
	v, err := schema.ViewShardBatch(rec)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Validate(); err != nil {
		t.Fatal(err)
	}
	wantBase := [][]uint32{{}, {0}, {1, 0, 5}}
	for i, w := range wantBase {
		got := v.Base[v.BaseOff[i]:v.BaseOff[i+1]]
		if len(got) != len(w) {
			t.Fatalf("row %d base %v, want %v", i, got, w)
		}
		for j := range w {
			if got[j] != w[j] {
				t.Fatalf("row %d base %v, want %v", i, got, w)
			}
		}
	}
	// Copying row by row gives the same bytes.
	var c Rows
	for i := 0; i < v.Rows; i++ {
		c.AppendRow(v, i)
	}
	x, _ := Encode(all)
	y, _ := Encode(&c)
	if string(x) != string(y) {
		t.Fatal("row-by-row copy of a paired batch encodes differently")
	}
}

// TestAppendRowsSizeAdds: appending rows copies them (the same bytes as
// Concat) and adds exactly their Size, which the coordinator's buffer
// budget relies on.
func TestAppendRowsSizeAdds(t *testing.T) {
	var a, b, c Rows
	a.Append(0, "q0", []string{"tier=1"}, []int32{2, 1}, []uint32{0, 7, 1})
	b.Append(1, "q1", nil, nil, []uint32{4})
	b.Append(2, "query-two", []string{"a=b", "c=d"}, []int32{1}, nil)
	c.AppendRows(&a)
	if c.Size() != a.Size() {
		t.Fatalf("size %d after one append, want %d", c.Size(), a.Size())
	}
	c.AppendRows(&b)
	if c.Size() != a.Size()+b.Size() || c.Len() != 3 {
		t.Fatalf("size %d, %d rows after two appends, want %d, 3", c.Size(), c.Len(), a.Size()+b.Size())
	}
	x, _ := Encode(Concat([]*Rows{&a, &b}))
	y, _ := Encode(&c)
	if string(x) != string(y) {
		t.Fatal("appended rows encode differently from concatenated ones")
	}
}
