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
	List(ctx context.Context) ([]HistoryEntry, error)
}

// HistoryEntry is one stored summary.
type HistoryEntry struct {
	// Name says where it is stored, for errors: a file's path, or the
	// object store bucket and the object's name.
	Name string
	Data []byte
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
// reported, not skipped: as a *schema.InputError naming the entry.
func Load(ctx context.Context, h HistoryStore) ([]*summary.Summary, error) {
	entries, err := h.List(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]*summary.Summary, 0, len(entries))
	for _, e := range entries {
		s, err := summary.Parse(e.Name, e.Data)
		if err != nil {
			return nil, fmt.Errorf("read history entry: %w", err)
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
func (d DirHistory) List(context.Context) ([]HistoryEntry, error) {
	ents, err := os.ReadDir(d.Dir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read history directory: %w", err)
	}
	var out []HistoryEntry
	for _, e := range ents {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".json") || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		path := filepath.Join(d.Dir, e.Name())
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("read history entry: %w", err)
		}
		out = append(out, HistoryEntry{Name: path, Data: b})
	}
	return out, nil
}

// Trend is one measure, or one cost of a live retrieval, across the
// history, over all queries or over the queries of one tag group.
type Trend struct {
	Measure                 string
	Tag                     string    // "category=legal"; empty for all queries
	Unit                    string    // UnitFraction for a measure; UnitMS or UnitQueries for a cost
	Values                  []float64 // oldest first; NaN where a run lacks the value
	Current, Mean, Min, Max float64
	SinceFirst, SinceLast   float64 // current minus the first and the previous value
	// Floor is a measure gate's threshold; for a cost gate's, a ceiling.
	Floor  *float64
	Alerts []string
	Runs   int
}

// series is what a trend follows: a measure (higher is better) or a cost
// figure of a live retrieval (lower is better).
type series struct {
	name string
	cost bool
}

func seriesOf(g Gate) series {
	if g.Cost != "" {
		return series{name: g.Cost, cost: true}
	}
	return series{name: g.Measure.String()}
}

// value returns the series' value in s, over a tag group if tag is set,
// with the number of queries it rests on.
func (se series) value(s *summary.Summary, tag string) (float64, int64, bool) {
	switch {
	case se.cost:
		return costOf(s.Retrieval, se.name, tag)
	case tag == "":
		v, ok := s.Value(se.name)
		return v, s.Counts.ScoredQueries, ok
	}
	return s.GroupValue(tag, se.name)
}

func (se series) unit() string {
	if se.cost {
		return costUnit(se.name)
	}
	return UnitFraction
}

// Trends computes the trend of every mean measure of the latest summary,
// and of each tag group a floor of c (which may be nil) gates on. Alerts
// fire when the latest value is below a gate's floor, or when the value
// went down downNights runs in a row (or more: the alert states the whole
// streak). A floor the latest summary cannot be checked against is not
// among the trends: NotChecked names it.
func Trends(history []*summary.Summary, c *Criteria, downNights int) []Trend {
	if len(history) == 0 {
		return nil
	}
	last := history[len(history)-1]
	var out []Trend
	for _, m := range last.Measures {
		if m.Kind == "mean" {
			out = append(out, trend(history, series{name: m.Name}, "", downNights))
		}
	}
	if c == nil {
		return out
	}
	for _, g := range c.Gates {
		if g.Threshold == nil || floorUnchecked(last, g) != "" {
			continue
		}
		se := seriesOf(g)
		i := slices.IndexFunc(out, func(t Trend) bool { return t.Measure == se.name && t.Tag == g.Tag })
		if i < 0 {
			out = append(out, trend(history, se, g.Tag, downNights))
			i = len(out) - 1
		}
		t := &out[i]
		t.Floor = g.Threshold
		// Limit alerts come first, as the most serious.
		switch {
		case se.cost && t.Current > *g.Threshold+1e-9:
			t.Alerts = append([]string{fmt.Sprintf("above the ceiling of %s (gate %s)", limitText(t.Unit, *g.Threshold), g.Name)}, t.Alerts...)
		case !se.cost && t.Current < *g.Threshold:
			t.Alerts = append([]string{fmt.Sprintf("below the floor of %s (gate %s)", pct(*g.Threshold), g.Name)}, t.Alerts...)
		}
	}
	return out
}

// trend computes one series' trend, over a tag group if tag is set; the
// latest summary has the value. A streak is of drops for a measure, of
// rises for a cost.
func trend(history []*summary.Summary, se series, tag string, downNights int) Trend {
	t := Trend{Measure: se.name, Tag: tag, Unit: se.unit(), Runs: len(history)}
	var present []float64
	for _, s := range history {
		v, _, ok := se.value(s, tag)
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
	// The streak is the whole run of drops up to the latest value, which
	// may be longer than the downNights that raise the alert.
	worse := func(now, before float64) bool { return now < before }
	dir := "down"
	if se.cost {
		worse, dir = func(now, before float64) bool { return now > before }, "up"
	}
	streak := 0
	for i := len(present) - 1; i > 0 && worse(present[i], present[i-1]); i-- {
		streak++
	}
	if downNights > 0 && streak >= downNights {
		total := deltaText(t.Unit, t.Current-present[len(present)-1-streak])
		if streak == 1 {
			t.Alerts = append(t.Alerts, fmt.Sprintf("%s since the previous run (%s)", dir, total))
		} else {
			t.Alerts = append(t.Alerts, fmt.Sprintf("%s %d runs in a row (%s in total)", dir, streak, total))
		}
	}
	return t
}

// NotChecked names each gate of c the history cannot check on its latest
// summary, and why: a floor whose measure or tag group the summary lacks,
// or whose group has fewer queries than the gate's min_queries; and a gate
// without a floor (history checks floors, not regressions). Nil for nil
// criteria or an empty history.
func NotChecked(history []*summary.Summary, c *Criteria) []string {
	if c == nil || len(history) == 0 {
		return nil
	}
	last := history[len(history)-1]
	var out []string
	for _, g := range c.Gates {
		why := "it has no floor (threshold): history checks floors, not regression limits"
		if g.Threshold != nil {
			why = floorUnchecked(last, g)
		}
		if why != "" {
			out = append(out, fmt.Sprintf("gate %s (%s%s): not checked: %s", g.Name, seriesOf(g).name, tagSuffix(g.Tag), why))
		}
	}
	return out
}

// floorUnchecked says why s cannot be checked against g's floor, or
// returns "" if it can.
func floorUnchecked(s *summary.Summary, g Gate) string {
	se := seriesOf(g)
	name := se.name
	if se.cost && s.Retrieval == nil {
		return "the latest run is not a live retrieval (--retriever): it has no " + name
	}
	if g.Tag == "" {
		if _, _, ok := se.value(s, ""); !ok {
			return "the latest run has no " + name
		}
		return ""
	}
	_, n, ok := se.value(s, g.Tag)
	switch {
	case !s.HasGroup(g.Tag):
		return "no query of the latest run has the tag " + g.Tag
	case !ok:
		return fmt.Sprintf("the latest run has no %s for %s", name, g.Tag)
	case n < int64(g.MinQueries):
		return fmt.Sprintf("not enough queries: %d with %s in the latest run, at least %d needed", n, g.Tag, g.MinQueries)
	}
	return ""
}

// WriteTrends prints the trends and their alerts, then the gates that
// could not be checked (NotChecked).
func WriteTrends(w io.Writer, trends []Trend, notChecked []string) error {
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
		fmt.Fprintf(tw, "%s%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.Measure, tagSuffix(t.Tag), valueText(t.Unit, t.Current),
			valueText(t.Unit, t.Mean), valueText(t.Unit, t.Min), valueText(t.Unit, t.Max),
			deltaText(t.Unit, t.SinceFirst), deltaText(t.Unit, t.SinceLast), strings.Join(t.Alerts, "; "))
	}
	tw.Flush()
	if n := Alerts(trends); n > 0 {
		fmt.Fprintf(&b, "\n%d %s\n", n, summary.Plural(n, "alert", "alerts"))
	}
	if len(notChecked) > 0 {
		b.WriteString("\n")
		for _, n := range notChecked {
			fmt.Fprintf(&b, "%s\n", n)
		}
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
