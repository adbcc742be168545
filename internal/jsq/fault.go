package jsq

import (
	"context"
	"fmt"
)

// Faults injects queue faults for the fault-tolerance tests: each acts on
// the server's state the way data loss or corruption would. It is not for
// production use.
type Faults struct{ c *Conn }

// Faults returns the fault injector of this connection.
func (c *Conn) Faults() Faults { return Faults{c: c} }

// DropTask deletes a task message from the work queue, as a server that
// lost unsynced writes would.
func (f Faults) DropTask(ctx context.Context, job, task string) error {
	s, err := f.c.js.Stream(ctx, StreamTasks)
	if err != nil {
		return fmt.Errorf("open stream %s: %w", StreamTasks, err)
	}
	m, err := s.GetLastMsgForSubject(ctx, taskSubject(job, task))
	if err != nil {
		return fmt.Errorf("look up task %s: %w", task, err)
	}
	if err := s.DeleteMsg(ctx, m.Sequence); err != nil {
		return fmt.Errorf("delete task %s: %w", task, err)
	}
	return nil
}
