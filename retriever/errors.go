package retriever

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/evalgate/evalgate/internal/httpcall"
)

// Sentinels. Errors of Retrieve and Probe wrap them; test with errors.Is.
var (
	// ErrAnswerShape: an answer does not hold what the file's paths say
	// (results missing or not a list, a hit without an id, a score that
	// is not a number, no embedding at embed.vector). It is a
	// configuration problem: the error is a *schema.InputError naming the
	// key's line, and callers stop the job (exit 2).
	ErrAnswerShape = errors.New("answer does not match the retriever file")
	// ErrTemplate: a template failed for one query (a missing tag with
	// missingkey=error). Also a *schema.InputError.
	ErrTemplate = errors.New("template failed")
	// ErrMalformedAnswer: a 2xx answer whose body is not JSON. Not
	// retried (see QueryError).
	ErrMalformedAnswer = errors.New("answer is not JSON")
	// ErrAnswerTooLarge: an answer longer than MaxAnswerBytes. Not retried.
	ErrAnswerTooLarge = httpcall.ErrTooLarge
	// ErrRetryAfterTooLong: the server asked to wait longer than
	// max_retry_after. The query fails rather than wait.
	ErrRetryAfterTooLong = errors.New("server asks to wait beyond max_retry_after")
	// ErrTimeout: an attempt took longer than the file's timeout.
	ErrTimeout = httpcall.ErrTimeout
)

// ExcerptBytes is the length of the answer excerpt a QueryError keeps.
const ExcerptBytes = 200

// QueryError is a query that got no usable answer: its attempts ran out,
// or its failure is not one a retry can fix (a 4xx other than 408 and
// 429, a 2xx that is not JSON, an answer too large, a Retry-After beyond
// the cap). It holds no secret: Body and Err are redacted.
type QueryError struct {
	QueryID  string
	Step     Step   // the request that failed: search or embed
	Attempts int    // attempts made for that request
	Status   int    // HTTP status of the last answer; 0 when none came
	Body     string // first ExcerptBytes bytes of the last answer, redacted
	// Err is the cause besides the status: the last transport error, or
	// one of ErrMalformedAnswer, ErrAnswerTooLarge, ErrRetryAfterTooLong;
	// nil when the status says it all. Redacted.
	Err error
}

// Error renders `retrieve query "q1": 5 attempts, last answer HTTP 503
// Service Unavailable: "…"` or `…, last error: …`.
func (e *QueryError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "retrieve query %q: ", e.QueryID)
	if e.Step == StepEmbed {
		b.WriteString("embed request: ")
	}
	b.WriteString(plural(e.Attempts, "attempt"))
	if e.Status != 0 {
		fmt.Fprintf(&b, ", last answer HTTP %d %s", e.Status, http.StatusText(e.Status))
	}
	if e.Err != nil {
		if e.Status != 0 {
			fmt.Fprintf(&b, ": %v", e.Err)
		} else {
			fmt.Fprintf(&b, ", last error: %v", e.Err)
		}
	}
	if e.Status != 0 {
		fmt.Fprintf(&b, ": body %s", strconv.Quote(e.Body))
	}
	return b.String()
}

// Unwrap returns the cause.
func (e *QueryError) Unwrap() error { return e.Err }

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}

// retryAfterError builds the cause of a Retry-After beyond the cap.
func retryAfterError(wait, limit time.Duration) error {
	return fmt.Errorf("%w: the server asks to retry after %s, more than max_retry_after %s", ErrRetryAfterTooLong, wait.Round(time.Second), limit)
}
