package jsq

import (
	"context"
	"encoding/json"
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

// ReplacePayload replaces a task's payload object with other bytes (the
// first byte flipped), a complete and self-consistent object whose digest
// no longer matches the one in the task.
func (f Faults) ReplacePayload(ctx context.Context, job, task string) error {
	obs, err := f.c.objects(ctx)
	if err != nil {
		return err
	}
	name := job + "/" + task
	data, err := obs.GetBytes(ctx, name)
	if err != nil {
		return fmt.Errorf("read payload %s: %w", name, err)
	}
	data[0] ^= 0xff
	if err := f.c.putObject(ctx, obs, name, data); err != nil {
		return fmt.Errorf("replace payload %s: %w", name, err)
	}
	return nil
}

// CorruptPayloadChunk alters the last chunk of a task's payload object in
// place, so the chunks no longer hash to the object's own digest (as a
// damaged store would).
func (f Faults) CorruptPayloadChunk(ctx context.Context, job, task string) error {
	obs, err := f.c.objects(ctx)
	if err != nil {
		return err
	}
	name := job + "/" + task
	info, err := obs.GetInfo(ctx, name)
	if err != nil {
		return fmt.Errorf("look up payload %s: %w", name, err)
	}
	s, err := f.c.js.Stream(ctx, "OBJ_"+BucketShards)
	if err != nil {
		return fmt.Errorf("open object stream of %s: %w", BucketShards, err)
	}
	subject := "$O." + BucketShards + ".C." + info.NUID
	m, err := s.GetLastMsgForSubject(ctx, subject)
	if err != nil {
		return fmt.Errorf("read last chunk of %s: %w", name, err)
	}
	if err := s.DeleteMsg(ctx, m.Sequence); err != nil {
		return fmt.Errorf("delete last chunk of %s: %w", name, err)
	}
	altered := append([]byte(nil), m.Data...)
	altered[len(altered)-1] ^= 0xff
	if _, err := f.c.js.Publish(ctx, subject, altered); err != nil {
		return fmt.Errorf("write altered chunk of %s: %w", name, err)
	}
	return nil
}

// DropWorkerRegistry deletes the worker heartbeat bucket, as a server
// restart did to the memory bucket earlier versions created.
func (f Faults) DropWorkerRegistry(ctx context.Context) error {
	if err := f.c.js.DeleteKeyValue(ctx, BucketWorkers); err != nil {
		return fmt.Errorf("delete bucket %s: %w", BucketWorkers, f.c.explain(err))
	}
	return nil
}

// PurgeTaskStream asks JetStream to purge the whole task stream, with the
// request alone (no lookup first), as a user trying to wipe the queue
// would: the tests check that a worker's and status's permissions refuse
// it.
func (f Faults) PurgeTaskStream(ctx context.Context) error {
	reply, err := f.c.nc.RequestWithContext(ctx, "$JS.API.STREAM.PURGE."+StreamTasks, nil)
	if err != nil {
		return fmt.Errorf("purge stream %s: %w", StreamTasks, f.c.explain(err))
	}
	var resp struct {
		Error *struct {
			Description string `json:"description"`
		} `json:"error"`
	}
	if err := json.Unmarshal(reply.Data, &resp); err != nil {
		return fmt.Errorf("purge stream %s: %w", StreamTasks, err)
	}
	if resp.Error != nil {
		return fmt.Errorf("purge stream %s: %s", StreamTasks, resp.Error.Description)
	}
	return nil
}
