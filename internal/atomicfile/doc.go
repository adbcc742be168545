// Package atomicfile writes output files so that a reader never sees a
// half-written one: data goes to a temporary file in the same directory,
// which is synced and renamed over the target on Commit and removed on
// Abort. An output that fails midway leaves nothing behind.
package atomicfile
