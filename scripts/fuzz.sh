#!/usr/bin/env bash
# Runs every fuzz target of the module for a short, bounded time
# (FUZZTIME, default 5s each). A failure leaves its reproducer under the
# package's testdata/fuzz directory, where `go test` replays it from then on.
set -euo pipefail
fuzztime=${FUZZTIME:-5s}
go=${GO:-go}
for pkg in $($go list ./...); do
	for target in $($go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
		echo "fuzz $pkg $target ($fuzztime)"
		$go test "$pkg" -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime"
	done
done
