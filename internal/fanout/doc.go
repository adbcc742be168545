// Package fanout runs the independent items of a batch of work (the
// queries of a retrieval task, the pairs of a judging task) on a bounded
// number of goroutines: at most a limit of them in flight, the first
// failure cancelling the rest, every goroutine waited for before it
// returns.
package fanout
