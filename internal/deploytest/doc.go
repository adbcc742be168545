// Package deploytest holds the tests that keep the deployment files in
// step with the code: every Kubernetes manifest of deploy/kubernetes (each
// YAML document parsed), docker-compose.yml and the NATS configurations of
// deploy/nats are checked against the names the code uses — streams,
// consumer, NATS account and users, the printed server configuration,
// ports, probe paths, environment variables, the drain time — so that a
// rename in the code fails a test instead of a deployment.
package deploytest
