package gate

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/evalgate/evalgate/internal/atomicfile"
	"github.com/evalgate/evalgate/summary"
)

// HistoryStore keeps the summaries of a series of evaluations (nightly
// runs): a directory on one machine, a JetStream object store in a
// cluster.
type HistoryStore interface {
	// Put stores a summary under name (unique and sortable by time).
	Put(ctx context.Context, name string, data []byte) error
	// List returns every stored summary, oldest first.
	List(ctx context.Context) ([][]byte, error)
}

// EntryName names a history entry: the time the evaluation started (so
// entries sort in the order the runs were made), then the job or a digest
// of the run. The name depends only on the summary, so recording the same
// evaluation again (re-gating it with evalgate gate) replaces its entry
// instead of adding a second one. A summary without a start time is named
// by the current time.
func EntryName(s *summary.Summary) string {
	t, err := time.Parse(time.RFC3339Nano, s.Execution.StartedAt)
	if err != nil {
		t = time.Now()
	}
	t = t.UTC()
	id := s.Execution.Job
	if id == "" {
		id = strings.TrimPrefix(s.Inputs.Run.Digest, "xxh3-128-sum:")
		if len(id) > 12 {
			id = id[:12]
		}
	}
	return t.Format("20060102T150405.000000000Z") + "-" + id + ".json"
}

// Record stores a summary in the history.
func Record(ctx context.Context, h HistoryStore, s *summary.Summary) error {
	var b bytes.Buffer
	if err := s.WriteJSON(&b); err != nil {
		return err
	}
	return h.Put(ctx, EntryName(s), b.Bytes())
}

// Load reads the history, oldest first. Entries that do not parse are
// reported, not skipped.
func Load(ctx context.Context, h HistoryStore) ([]*summary.Summary, error) {
	raw, err := h.List(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]*summary.Summary, 0, len(raw))
	for i, b := range raw {
		s, err := summary.ReadJSON(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("read history entry %d: %w", i+1, err)
		}
		out = append(out, s)
	}
	return out, nil
}

// DirHistory is a HistoryStore in a directory: one JSON file per run.
type DirHistory struct{ Dir string }

// Put writes the entry atomically.
func (d DirHistory) Put(_ context.Context, name string, data []byte) error {
	if err := os.MkdirAll(d.Dir, 0o755); err != nil {
		return fmt.Errorf("create history directory: %w", err)
	}
	return atomicfile.WriteFile(filepath.Join(d.Dir, name), data)
}

// List reads every *.json entry, in name order.
func (d DirHistory) List(context.Context) ([][]byte, error) {
	ents, err := os.ReadDir(d.Dir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read history directory: %w", err)
	}
	var out [][]byte
	for _, e := range ents {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".json") || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(d.Dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("read history entry: %w", err)
		}
		out = append(out, b)
	}
	return out, nil
}

// Trend is one measure across the history.
type Trend struct {
	Measure                 string
	Values                  []float64 // oldest first; NaN where a run lacks the measure
	Current, Mean, Min, Max float64
	SinceFirst, SinceLast   float64 // current minus the first and the previous value
	Floor                   *float64
	Alerts                  []string
	Runs                    int
}

// Trends computes the trend of every mean measure of the latest summary;
// alerts fire when the latest value is below a gate's floor (overall gates
// of c, which may be nil) or when the measure went down downNights runs in
// a row (or more: the alert states the whole streak).
func Trends(history []*summary.Summary, c *Criteria, downNights int) []Trend {
	if len(history) == 0 {
		return nil
	}
	last := history[len(history)-1]
	var out []Trend
	for _, m := range last.Measures {
		if m.Kind != "mean" {
			continue
		}
		t := Trend{Measure: m.Name, Runs: len(history)}
		var present []float64
		for _, s := range history {
			v, ok := s.Value(m.Name)
			if !ok {
				v = math.NaN()
			} else {
				present = append(present, v)
			}
			t.Values = append(t.Values, v)
		}
		t.Current = present[len(present)-1]
		t.Min, t.Max = slices.Min(present), slices.Max(present)
		sum := 0.0
		for _, v := range present {
			sum += v
		}
		t.Mean = sum / float64(len(present))
		t.SinceFirst = t.Current - present[0]
		if len(present) > 1 {
			t.SinceLast = t.Current - present[len(present)-2]
		}
		if c != nil {
			for _, g := range c.Gates {
				if g.Tag == "" && g.Threshold != nil && g.Measure.String() == m.Name {
					t.Floor = g.Threshold
					if t.Current < *g.Threshold {
						t.Alerts = append(t.Alerts, fmt.Sprintf("below the floor of %s (gate %s)", pct(*g.Threshold), g.Name))
					}
				}
			}
		}
		// The streak is the whole run of drops up to the latest value,
		// which may be longer than the downNights that raise the alert.
		streak := 0
		for i := len(present) - 1; i > 0 && present[i] < present[i-1]; i-- {
			streak++
		}
		if downNights > 0 && streak >= downNights {
			total := points(t.Current - present[len(present)-1-streak])
			if streak == 1 {
				t.Alerts = append(t.Alerts, fmt.Sprintf("down since the previous run (%s)", total))
			} else {
				t.Alerts = append(t.Alerts, fmt.Sprintf("down %d runs in a row (%s in total)", streak, total))
			}
		}
		out = append(out, t)
	}
	return out
}

// WriteTrends prints the trends and their alerts.
func WriteTrends(w io.Writer, trends []Trend) error {
	var b strings.Builder
	if len(trends) == 0 {
		b.WriteString("history is empty\n")
		_, err := io.WriteString(w, b.String())
		return err
	}
	fmt.Fprintf(&b, "%d %s\n\n", trends[0].Runs, summary.Plural(trends[0].Runs, "run", "runs"))
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "measure\tcurrent\tmean\tmin\tmax\tsince first\tsince last\talert")
	for _, t := range trends {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.Measure, pct(t.Current), pct(t.Mean), pct(t.Min), pct(t.Max),
			points(t.SinceFirst), points(t.SinceLast), strings.Join(t.Alerts, "; "))
	}
	tw.Flush()
	n := 0
	for _, t := range trends {
		n += len(t.Alerts)
	}
	if n > 0 {
		fmt.Fprintf(&b, "\n%d %s\n", n, summary.Plural(n, "alert", "alerts"))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Alerts counts the alerts of trends.
func Alerts(trends []Trend) int {
	n := 0
	for _, t := range trends {
		n += len(t.Alerts)
	}
	return n
}
