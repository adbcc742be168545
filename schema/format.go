package schema

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Format is an input or output file format.
type Format uint8

// The formats.
const (
	FormatAuto        Format = iota
	FormatTREC               // TREC qrels (qid iter doc grade) or run (qid Q0 doc rank score tag), plain or .gz
	FormatJSONL              // one JSON object per line, plain or .gz
	FormatArrow              // Arrow IPC file (Feather v2)
	FormatArrowStream        // Arrow IPC stream
	FormatParquet            // Parquet
)

// ParseFormat parses a --*-format flag value.
func ParseFormat(s string) (Format, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "auto":
		return FormatAuto, nil
	case "trec", "qrels", "run", "trec-run", "trec-qrels":
		return FormatTREC, nil
	case "jsonl", "ndjson", "json":
		return FormatJSONL, nil
	case "arrow", "ipc", "feather", "arrow-file":
		return FormatArrow, nil
	case "arrows", "arrow-stream", "ipc-stream":
		return FormatArrowStream, nil
	case "parquet", "pq":
		return FormatParquet, nil
	}
	return FormatAuto, fmt.Errorf("unknown format %q (want auto, trec, jsonl, arrow, arrow-stream or parquet)", s)
}

func (f Format) String() string {
	switch f {
	case FormatTREC:
		return "trec"
	case FormatJSONL:
		return "jsonl"
	case FormatArrow:
		return "arrow"
	case FormatArrowStream:
		return "arrow-stream"
	case FormatParquet:
		return "parquet"
	}
	return "auto"
}

// Magic numbers.
var (
	magicGzip    = []byte{0x1f, 0x8b}
	magicArrow   = []byte("ARROW1")
	magicParquet = []byte("PAR1")
	magicStream  = []byte{0xff, 0xff, 0xff, 0xff}
)

// FormatFromExtension guesses the format from a file name, ignoring a .gz
// suffix. It returns FormatAuto when the extension says nothing.
func FormatFromExtension(path string) Format {
	name := strings.ToLower(filepath.Base(path))
	name = strings.TrimSuffix(name, ".gz")
	switch filepath.Ext(name) {
	case ".jsonl", ".ndjson", ".json":
		return FormatJSONL
	case ".arrow", ".feather", ".ipc":
		return FormatArrow
	case ".arrows":
		return FormatArrowStream
	case ".parquet", ".pq":
		return FormatParquet
	case ".qrels", ".trec", ".run", ".txt", ".tsv", ".res", ".test":
		return FormatTREC
	}
	return FormatAuto
}

// DetectFormat decides the format of the file at path: by the leading
// bytes where they are conclusive (Arrow, Parquet, JSON objects), by the
// extension otherwise, and TREC text as the fallback.
func DetectFormat(path string) (Format, error) {
	f, err := os.Open(path)
	if err != nil {
		return FormatAuto, fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		return FormatAuto, fmt.Errorf("detect format of %s: %w", path, syscall.EISDIR)
	}
	head := make([]byte, 512)
	n, err := io.ReadFull(f, head)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return FormatAuto, fmt.Errorf("read %s: %w", path, err)
	}
	head = head[:n]
	if bytes.HasPrefix(head, magicGzip) {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return FormatAuto, fmt.Errorf("seek %s: %w", path, err)
		}
		zr, err := newGzipReader(f)
		if err != nil {
			return FormatAuto, &InputError{File: path, Err: err}
		}
		defer zr.Close()
		head = make([]byte, 512)
		n, _ := io.ReadFull(zr, head)
		head = head[:n]
		if f := detectText(head, path); f != FormatAuto {
			return f, nil
		}
		return FormatTREC, nil
	}
	switch {
	case bytes.HasPrefix(head, magicArrow):
		return FormatArrow, nil
	case bytes.HasPrefix(head, magicParquet):
		return FormatParquet, nil
	case bytes.HasPrefix(head, magicStream):
		return FormatArrowStream, nil
	}
	if f := detectText(head, path); f != FormatAuto {
		return f, nil
	}
	return FormatTREC, nil
}

func detectText(head []byte, path string) Format {
	// Skip a byte-order mark and blank and comment lines, then look at the
	// first character.
	sc := bufio.NewScanner(bytes.NewReader(trimBOM(head)))
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		if line[0] == '{' {
			return FormatJSONL
		}
		break
	}
	return FormatFromExtension(path)
}
