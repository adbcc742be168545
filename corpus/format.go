package corpus

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/evalgate/evalgate/schema"
)

// Format is a corpus file format.
type Format uint8

// The formats.
const (
	FormatAuto    Format = iota
	FormatJSONL          // one JSON object per line, plain or .gz
	FormatTSV            // id<TAB>text or id<TAB>text<TAB>title per line (MS MARCO, BEIR, DPR), plain or .gz
	FormatParquet        // Parquet with id and text columns (and title), plain or .gz
)

func (f Format) String() string {
	switch f {
	case FormatJSONL:
		return "jsonl"
	case FormatTSV:
		return "tsv"
	case FormatParquet:
		return "parquet"
	}
	return "auto"
}

// ParseFormat parses a --corpus-format flag value.
func ParseFormat(s string) (Format, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "auto":
		return FormatAuto, nil
	case "jsonl", "ndjson", "json":
		return FormatJSONL, nil
	case "tsv", "collection", "collection.tsv":
		return FormatTSV, nil
	case "parquet", "pq":
		return FormatParquet, nil
	}
	return FormatAuto, fmt.Errorf("parse corpus format %q: want auto, jsonl, tsv or parquet", s)
}

// formatFromExtension guesses the format from a file name, ignoring a .gz
// suffix; FormatAuto when the extension says nothing.
func formatFromExtension(path string) Format {
	name := strings.TrimSuffix(strings.ToLower(filepath.Base(path)), ".gz")
	switch filepath.Ext(name) {
	case ".jsonl", ".ndjson", ".json":
		return FormatJSONL
	case ".tsv", ".tab":
		return FormatTSV
	case ".parquet", ".pq":
		return FormatParquet
	}
	return FormatAuto
}

var magicParquet = []byte("PAR1")

// DetectFormat decides the format of the corpus at path, looking inside
// gzip: Parquet by its magic number, JSONL when the first character (after
// a byte-order mark and white space) opens a JSON object, else by the
// extension, and TSV when the extension says nothing.
func DetectFormat(path string) (Format, error) {
	r, err := schema.OpenStream(path)
	if err != nil {
		return FormatAuto, fmt.Errorf("detect format: %w", err)
	}
	defer r.Close()
	head := make([]byte, 512)
	n, err := io.ReadFull(r, head)
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		// A corrupt stream is reported where it is read in full.
		if !schema.IsInvalidInput(err) && !isCorrupt(err) {
			return FormatAuto, fmt.Errorf("read %s: %w", path, err)
		}
	}
	head = head[:n]
	if bytes.HasPrefix(head, magicParquet) {
		return FormatParquet, nil
	}
	text := bytes.TrimLeft(bytes.TrimPrefix(head, utf8BOM), " \t\r\n")
	if len(text) > 0 && text[0] == '{' {
		return FormatJSONL, nil
	}
	if f := formatFromExtension(path); f != FormatAuto {
		return f, nil
	}
	return FormatTSV, nil
}
