// Package mock holds function-field fakes of the interfaces the worker
// and the coordinator declare, for unit tests that exercise one behaviour
// at a time. Each test sets only the functions it needs; calling an unset
// one panics with its name, so a test never passes by accident.
package mock
