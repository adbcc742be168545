// Package dockertest runs evalgate as docker-compose.yml deploys it — a
// three-node JetStream cluster, scaled workers and a coordinator, each a
// container of the evalgate:local image — and checks that the cluster's
// summary equals single-process scoring, also when a JetStream node and a
// worker are killed mid-job. The tests need Docker and docker-compose and
// carry the build tag "docker" (make docker-test).
package dockertest
