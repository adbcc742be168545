package jsq

import (
	"strings"
	"testing"
)

// matches reports whether subject matches the NATS subject pattern (with
// the * and > wildcards).
func matches(pattern, subject string) bool {
	p, s := strings.Split(pattern, "."), strings.Split(subject, ".")
	for i, tok := range p {
		switch {
		case tok == ">":
			return len(s) > i
		case i >= len(s):
			return false
		case tok != "*" && tok != s[i]:
			return false
		}
	}
	return len(p) == len(s)
}

func allowed(list []string, subject string) bool {
	for _, p := range list {
		if matches(p, subject) {
			return true
		}
	}
	return false
}

// TestRolePermissions: what each role must be able to publish, and what
// it must not (the end-to-end test runs the real calls under these
// lists; this one pins the refusals that matter most).
func TestRolePermissions(t *testing.T) {
	for _, c := range []struct {
		role        Role
		allow, deny []string
	}{
		{RoleWorker,
			[]string{"$JS.API.CONSUMER.MSG.NEXT.EVALGATE_TASKS.workers", "$JS.ACK.EVALGATE_TASKS.workers.1.2.3.4.5",
				"evalgate.partial.j.000001-0000", "evalgate.judgment.j.t.3", "$KV.evalgate-limits.j.retriever"},
			[]string{"$JS.API.STREAM.PURGE.EVALGATE_TASKS", "$JS.API.STREAM.DELETE.EVALGATE_TASKS", "$JS.API.STREAM.CREATE.EVALGATE_TASKS",
				"$JS.API.CONSUMER.DELETE.EVALGATE_TASKS.workers", "$JS.API.CONSUMER.CREATE.EVALGATE_TASKS.workers",
				"$JS.API.CONSUMER.DURABLE.CREATE.EVALGATE_TASKS.workers", "$JS.API.STREAM.MSG.DELETE.EVALGATE_PARTIALS",
				"evalgate.task.j.000001-0000", "$KV.evalgate-jobs.j", "$JS.API.STREAM.DELETE.KV_evalgate-workers",
				"$JS.API.STREAM.PURGE.EVALGATE_PARTIALS"}},
		{RoleStatus,
			[]string{"$JS.API.STREAM.NAMES", "$JS.API.STREAM.INFO.EVALGATE_TASKS", "$JS.API.CONSUMER.INFO.EVALGATE_TASKS.workers",
				"$JS.API.STREAM.MSG.GET.EVALGATE_DLQ", "$JS.API.CONSUMER.CREATE.EVALGATE_DLQ.x.evalgate.dlq.>"},
			[]string{"$JS.API.CONSUMER.MSG.NEXT.EVALGATE_TASKS.workers", "$JS.API.CONSUMER.CREATE.EVALGATE_TASKS.x",
				"$JS.ACK.EVALGATE_TASKS.workers.1.2.3.4.5", "evalgate.partial.j.t", "evalgate.task.j.t", "$KV.evalgate-jobs.j",
				"$KV.evalgate-workers.w", "$JS.API.STREAM.PURGE.EVALGATE_TASKS", "$O.evalgate-history.C.x"}},
		{RoleCoordinator,
			[]string{"$JS.API.STREAM.CREATE.EVALGATE_TASKS", "$JS.API.STREAM.PURGE.EVALGATE_TASKS", "evalgate.task.j.t",
				"$KV.evalgate-jobs.j", "$JS.API.STREAM.CREATE.EVALGATE_JUDGMENTS"},
			[]string{"$JS.API.STREAM.DELETE.EVALGATE_TASKS", "$JS.API.CONSUMER.DELETE.EVALGATE_TASKS.workers",
				"$JS.API.STREAM.UPDATE.EVALGATE_TASKS", "$JS.API.STREAM.PURGE.EVALGATE_PARTIALS", "other.subject"}},
	} {
		p := RolePermissions(c.role)
		for _, s := range c.allow {
			if !allowed(p.Publish, s) {
				t.Errorf("%s may not publish to %s", c.role, s)
			}
		}
		for _, s := range c.deny {
			if allowed(p.Publish, s) {
				t.Errorf("%s may publish to %s", c.role, s)
			}
		}
		if len(p.Subscribe) != 1 || p.Subscribe[0] != "_INBOX.>" {
			t.Errorf("%s subscribes to %q, want only replies", c.role, p.Subscribe)
		}
	}
}
