// Package dockertest runs evalgate as docker-compose.yml deploys it — a
// three-node JetStream cluster with least-privilege NATS users, scaled
// workers serving metrics, coordinator and status containers, each a
// container of the evalgate image — and checks that the cluster's summary
// equals single-process scoring when all is well, when a worker is cut
// off the network mid-task and reconnected, and when a JetStream node and
// the workers are killed mid-job; that the workers' metrics count the
// work; that a worker user cannot purge the task stream; and that a worker
// with a wrong password stops at once, saying so. Each run has its own
// compose project and image tag and removes them, also on failure. The
// tests need Docker and docker-compose and carry the build tag "docker"
// (make docker-test).
package dockertest
