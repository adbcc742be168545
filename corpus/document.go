package corpus

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
)

// Document is one passage of a corpus.
type Document struct {
	ID    string
	Title string // empty when the corpus gives none
	Text  string
}

// ContentHash returns the SHA-256, in lower-case hex, of the passage's
// title and text: of the title's length in bytes as a big-endian uint64,
// the title, then the text. The length keeps ("ab", "c") and ("a", "bc")
// apart; a document without a title hashes as one with an empty title.
// The id is not hashed: the same passage under two ids has one hash. The
// hash keys the judgment cache, so this definition must not change.
func (d Document) ContentHash() string {
	h := sha256.New()
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(d.Title)))
	h.Write(n[:])
	h.Write([]byte(d.Title))
	h.Write([]byte(d.Text))
	return hex.EncodeToString(h.Sum(nil))
}
