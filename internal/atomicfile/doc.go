// Package atomicfile writes output files so that a reader never sees a
// half-written one: data goes to a temporary file in the same directory,
// which is synced and renamed over the target on Commit and removed on
// Abort. An output that fails midway leaves nothing behind.
//
// CreateUncached is for large outputs written once and not read back by
// the writer: on Linux, where the file system allows, the data goes to
// disk past the page cache (O_DIRECT), in aligned blocks, and the file is
// cut back to its exact length before it is synced; elsewhere, or where
// direct writes are refused, it is written as Create writes it.
package atomicfile
