#!/usr/bin/env bash
# Runs every fuzz target of the module for a short, bounded number of
# executions (FUZZTIME, default 20000x each). A failure leaves its reproducer
# under the package's testdata/fuzz directory, where `go test` replays it
# from then on.
#
# The budget is a count, not a duration, on purpose: with a wall-clock
# -fuzztime, Go 1.26's fuzz coordinator can report "context deadline
# exceeded" at the deadline with no failing input (golang/go#75804, fixed
# in Go 1.27). Minimization is bounded too, so a new interesting input
# cannot stall a short run for the default 60 s.
set -euo pipefail
fuzztime=${FUZZTIME:-20000x}
minimize=${FUZZMINIMIZETIME:-200x}
go=${GO:-go}
for pkg in $($go list ./...); do
	for target in $($go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
		echo "fuzz $pkg $target ($fuzztime)"
		$go test "$pkg" -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" -fuzzminimizetime "$minimize"
	done
done
