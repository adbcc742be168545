package jsq

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
)

// ConfigOptions configure ServerConfig.
type ConfigOptions struct {
	// StoreDir is JetStream's store directory (`evalgate server --store`
	// replaces it; a plain nats-server uses it).
	StoreDir string
	// MaxPayload, if positive, sets the server's max_payload in bytes.
	MaxPayload int64
	// Passwords of the roles' users. A role without one gets a reference
	// to the environment variable PasswordEnv(role) with FromEnv, else a
	// generated password.
	Passwords map[Role]string
	// FromEnv writes $EVALGATE_<ROLE>_PASSWORD references, which the
	// server reads from its environment when it loads the file, for roles
	// without a password in Passwords.
	FromEnv bool
}

// PasswordEnv is the environment variable a server configured by
// ServerConfig(FromEnv) reads the role's password from.
func PasswordEnv(r Role) string { return "EVALGATE_" + strings.ToUpper(string(r)) + "_PASSWORD" }

// ServerConfig is a starting nats-server configuration for evalgate: its
// JetStream store, and the account Account with one user per role (named
// as the role) holding RolePermissions. It returns the roles whose
// passwords it generated.
func ServerConfig(o ConfigOptions) (config string, generated []Role, err error) {
	var b strings.Builder
	b.WriteString(`# evalgate's NATS users, one per role, each allowed only what evalgate's
# code does in that role (evalgate server --print-config):
#   coordinator  evalgate run --nats: creates the streams, consumer and
#                buckets, publishes jobs, reads results (and may run
#                workers in its process)
#   worker       evalgate worker: pulls tasks, reads payloads, stores
#                results, failures, answers and judgments, shares the rate
#                limits, sends heartbeats; no purge, no stream or consumer
#                creation or deletion
#   status       evalgate status, evalgate history: reads only
# The subjects follow evalgate's code: print this file again after an
# upgrade. Clients: --nats-user ROLE with --nats-password (or
# EVALGATE_NATS_USER, EVALGATE_NATS_PASSWORD).
`)
	for _, r := range Roles {
		if _, ok := o.Passwords[r]; ok {
			continue
		}
		if o.FromEnv {
			fmt.Fprintf(&b, "# The %s password is read from $%s when the server starts.\n", r, PasswordEnv(r))
		} else {
			generated = append(generated, r)
		}
	}
	if len(generated) > 0 {
		b.WriteString("# Passwords written below were generated: give each to its clients.\n")
	}
	b.WriteString("\njetstream {\n  store_dir: " + strconv.Quote(o.StoreDir) + "\n}\n")
	if o.MaxPayload > 0 {
		fmt.Fprintf(&b, "max_payload: %d\n", o.MaxPayload)
	}
	fmt.Fprintf(&b, "\naccounts {\n  %s {\n    jetstream: enabled\n    users: [\n", Account)
	for _, r := range Roles {
		password, ok := o.Passwords[r]
		switch {
		case ok:
			password = strconv.Quote(password)
		case o.FromEnv:
			password = "$" + PasswordEnv(r)
		default:
			var raw [18]byte
			if _, err := rand.Read(raw[:]); err != nil {
				return "", nil, fmt.Errorf("generate a password for %s: %w", r, err)
			}
			password = strconv.Quote(base64.RawURLEncoding.EncodeToString(raw[:]))
		}
		p := RolePermissions(r)
		fmt.Fprintf(&b, "      {\n        user: %s\n        password: %s\n        permissions: {\n", r, password)
		fmt.Fprintf(&b, "          publish: { allow: %s }\n", subjectList(p.Publish, 12))
		fmt.Fprintf(&b, "          subscribe: { allow: %s }\n", subjectList(p.Subscribe, 12))
		b.WriteString("        }\n      }\n")
	}
	b.WriteString("    ]\n  }\n}\n")
	return b.String(), generated, nil
}

// subjectList writes subjects as a quoted list, one per line when there
// are several, indented by indent.
func subjectList(subjects []string, indent int) string {
	if len(subjects) == 1 {
		return "[" + strconv.Quote(subjects[0]) + "]"
	}
	pad := strings.Repeat(" ", indent+2)
	var b strings.Builder
	b.WriteString("[\n")
	for _, s := range subjects {
		b.WriteString(pad + strconv.Quote(s) + "\n")
	}
	b.WriteString(strings.Repeat(" ", indent) + "]")
	return b.String()
}
