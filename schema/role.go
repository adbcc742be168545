package schema

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/apache/arrow/go/v16/arrow/ipc"
	"github.com/apache/arrow/go/v16/parquet/file"
	"github.com/apache/arrow/go/v16/parquet/pqarrow"
)

// DetectRole guesses whether a file holds a gold set or a run from its
// first record: the field count of a TREC line (4: qrels, 6 or more: run),
// the keys of a JSONL object, the columns of an Arrow or Parquet file.
func DetectRole(path string, format Format) (Role, error) {
	if format == FormatAuto {
		f, err := DetectFormat(path)
		if err != nil {
			return 0, err
		}
		format = f
	}
	switch format {
	case FormatTREC, FormatJSONL:
		line, err := firstDataLine(path)
		if err != nil {
			return 0, err
		}
		if format == FormatTREC {
			_, n := splitFields(line, nil)
			switch {
			case n == 4:
				return RoleGold, nil
			case n >= 6:
				return RoleRun, nil
			}
			return 0, &InputError{File: path, Err: fmt.Errorf("%w: cannot tell qrels (4 fields) from a run (6 fields): first line has %d", ErrFieldCount, n)}
		}
		var o map[string]json.RawMessage
		if err := json.Unmarshal(line, &o); err != nil {
			return 0, &InputError{File: path, Err: fmt.Errorf("first object: invalid JSON: %v", err)}
		}
		k1, gold := jsonObject(o).first(jsonGoldKeys)
		k2, run := jsonObject(o).first(jsonRetrieveKeys)
		switch {
		case gold != nil && run != nil:
			return 0, fmt.Errorf("%s has both %s and %s: say which with --role gold|run", path, k1, k2)
		case gold != nil:
			return RoleGold, nil
		case run != nil:
			return RoleRun, nil
		}
		return 0, &InputError{File: path, Err: fmt.Errorf("%w: first object has neither relevant nor retrieved documents", ErrMissingField)}
	}
	names, err := columnNames(path, format)
	if err != nil {
		return 0, &InputError{File: path, Err: fmt.Errorf("%w: %v", ErrCorrupt, err)}
	}
	for _, n := range names {
		switch n {
		case FieldGrade, FieldGrades, "relevance", "rel":
			return RoleGold, nil
		case FieldScore, FieldScores, FieldRank:
			return RoleRun, nil
		}
	}
	return 0, fmt.Errorf("%s: cannot tell a gold set from a run by its columns %v: say which with --role gold|run", path, names)
}

func firstDataLine(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	var r io.Reader = f
	br := bufio.NewReader(f)
	if head, _ := br.Peek(2); bytes.Equal(head, magicGzip) {
		zr, err := newGzipReader(br)
		if err != nil {
			return nil, &InputError{File: path, Err: err}
		}
		defer zr.Close()
		r = zr
	} else {
		r = br
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), MaxLineBytes)
	for first := true; sc.Scan(); first = false {
		l := bytes.TrimRight(sc.Bytes(), "\r")
		if first {
			l = trimBOM(l) // at the start of the file, not data
		}
		if len(l) == 0 || l[0] == '#' || isBlank(l) {
			continue
		}
		return bytes.Clone(l), nil
	}
	var gz *GzipError
	switch err := sc.Err(); {
	case errors.As(err, &gz):
		return nil, &InputError{File: path, Err: gz}
	case err != nil:
		return nil, &InputError{File: path, Err: fmt.Errorf("%w: %v", ErrCorrupt, err)}
	}
	return nil, &InputError{File: path, Err: fmt.Errorf("%w: no data lines", ErrMissingField)}
}

func columnNames(path string, format Format) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var names []string
	err = protect(func() error {
		switch format {
		case FormatArrow:
			if err := checkIPC(f, CheckIPCFile); err != nil {
				return err
			}
			r, err := ipc.NewFileReader(f)
			if err != nil {
				return err
			}
			defer r.Close()
			for _, fl := range r.Schema().Fields() {
				names = append(names, fl.Name)
			}
		case FormatArrowStream:
			if err := checkIPC(f, CheckIPCStream); err != nil {
				return err
			}
			r, err := ipc.NewReader(f)
			if err != nil {
				return err
			}
			defer r.Release()
			for _, fl := range r.Schema().Fields() {
				names = append(names, fl.Name)
			}
		case FormatParquet:
			pf, err := file.NewParquetReader(f)
			if err != nil {
				return err
			}
			defer pf.Close()
			if err := checkParquetArrowSchema(pf); err != nil {
				return err
			}
			s, err := pqarrow.FromParquet(pf.MetaData().Schema, nil, pf.MetaData().KeyValueMetadata())
			if err != nil {
				return err
			}
			for _, fl := range s.Fields() {
				names = append(names, fl.Name)
			}
		}
		return nil
	})
	return names, err
}

// checkIPC runs an IPC framing check (CheckIPCFile, CheckIPCStream) on f
// before the Arrow reader trusts the lengths in it.
func checkIPC(f *os.File, check func(io.ReaderAt, int64) error) error {
	info, err := f.Stat()
	if err != nil {
		return err
	}
	return check(f, info.Size())
}
