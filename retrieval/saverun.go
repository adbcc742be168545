package retrieval

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/evalgate/evalgate/schema"
)

// WriteRun writes the answered records as a run, in the order given: TREC
// text ("qid Q0 doc rank score tag") or JSONL ({"query_id", "retrieved":
// [{"id", "score"}]}, or "retrieved_ids" without scores). Rank is the
// position in the answer's list, so `score --rank-by rank` scores the file
// as the live job did. In TREC text a query answered with no hit has no
// line (it reads back as missing from the run); JSONL keeps it as an empty
// list. Without scores, TREC lines get score n+1−rank, which orders them as
// listed. Failed queries have no answer and are not written.
func WriteRun(w io.Writer, format schema.Format, tag string, recs []*Record) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	var err error
	switch format {
	case schema.FormatTREC:
		err = writeTREC(bw, tag, recs)
	case schema.FormatJSONL:
		err = writeJSONL(bw, recs)
	default:
		return fmt.Errorf("write run: %s: want TREC (.trec, .txt) or JSONL (.jsonl)", format)
	}
	if err != nil {
		return err
	}
	return bw.Flush()
}

func writeTREC(w *bufio.Writer, tag string, recs []*Record) error {
	if tag == "" || strings.ContainsAny(tag, " \t\r\n") {
		tag = "evalgate"
	}
	for _, r := range recs {
		if r.Failed() {
			continue
		}
		if strings.ContainsAny(r.QueryID, " \t\r\n") {
			return fmt.Errorf("write TREC run: query id %q holds white space, which TREC text cannot: save as .jsonl", r.QueryID)
		}
		for i, id := range r.IDs {
			if id == "" || strings.ContainsAny(id, " \t\r\n") {
				return fmt.Errorf("write TREC run: query %q: doc id %q is empty or holds white space, which TREC text cannot: save as .jsonl", r.QueryID, id)
			}
			score := float64(len(r.IDs) - i)
			if r.Scores != nil {
				score = r.Scores[i]
			}
			fmt.Fprintf(w, "%s Q0 %s %d %s %s\n", r.QueryID, id, i+1, strconv.FormatFloat(score, 'g', -1, 64), tag)
		}
	}
	return nil
}

type jsonHit struct {
	ID    string  `json:"id"`
	Score float64 `json:"score"`
}

func writeJSONL(w *bufio.Writer, recs []*Record) error {
	for _, r := range recs {
		if r.Failed() {
			continue
		}
		var line any
		if r.Scores != nil {
			hits := make([]jsonHit, len(r.IDs))
			for i, id := range r.IDs {
				hits[i] = jsonHit{id, r.Scores[i]}
			}
			line = struct {
				QueryID   string    `json:"query_id"`
				Retrieved []jsonHit `json:"retrieved"`
			}{r.QueryID, hits}
		} else {
			line = struct {
				QueryID string   `json:"query_id"`
				IDs     []string `json:"retrieved_ids"`
			}{r.QueryID, append([]string{}, r.IDs...)}
		}
		b, err := json.Marshal(line)
		if err != nil {
			return fmt.Errorf("write JSONL run: query %q: %w", r.QueryID, err)
		}
		w.Write(b)
		w.WriteByte('\n')
	}
	return nil
}
