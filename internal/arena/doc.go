// Package arena provides append-only storage that never moves what it
// holds: values live in fixed-size chunks, so appending never copies old
// data (growing a large slice by doubling copies it again and again, and
// on machines where first touching a page is expensive each copy also pays
// for fresh pages), and byte strings handed out stay valid.
package arena
