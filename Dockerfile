# A minimal image of evalgate. Nothing is pulled: the binary is built on the
# host (make docker-image: static, CGO_ENABLED=0) and copied into an empty
# image. The same image runs the JetStream nodes, the workers and the
# coordinator.
FROM scratch
COPY bin/evalgate-linux /evalgate
ENTRYPOINT ["/evalgate"]
