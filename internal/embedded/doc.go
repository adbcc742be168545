// Package embedded runs a NATS server with JetStream inside the evalgate
// process: the queue of `evalgate run` (in-process connections only, no
// listener) and of `evalgate server` (listening, by default on loopback).
//
// Its contract: the server never listens beyond loopback unless the caller
// asks for an explicit non-loopback address (or the config file names one:
// a port alone there means loopback), and never beyond loopback without
// client authentication (judged from the final server options, config file
// included); the store is a directory the caller owns (never
// the shared os.TempDir()/nats default); signals are left to the caller;
// and in-process clients survive Restart, because they connect through a
// provider that always forwards to the live server.
//
// Start fails at once, rather than waiting for a server that will never
// be ready: on a store that is not a writable directory and cannot be
// created (ErrBadStore); with nats-server's own reason when it cannot
// start (a port in use); and when a config file leaves evalgate's clients
// in an account without JetStream (ErrNoJetStream).
//
// # Internal user
//
// When the server requires credentials (users, nkeys, a token), evalgate's
// own clients in this process authenticate as an internal nkey user
// generated at Start. Its seed never leaves memory, the server admits it
// on in-process connections only, and it may publish only JetStream API
// requests and receive only replies: enough to create the evalgate streams,
// in the account the configured users share. See Server.InternalUser.
package embedded
