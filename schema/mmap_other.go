//go:build !unix

package schema

import "os"

// mapping is a read-only memory map of a file; this platform reads files
// instead.
type mapping []byte

func mapFile(*os.File, int64) (mapping, error) { return nil, nil }

func (m mapping) unmap() error { return nil }
