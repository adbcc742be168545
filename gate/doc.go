// Package gate turns an evaluation summary into a release verdict and
// renders it for people and for CI.
//
// Criteria (a YAML ship-criteria file) list gates: a measure (inferred from
// the gate's name, or given as metric:), optionally restricted to a tag
// group, with an absolute floor (threshold), a largest allowed drop from the
// baseline (regression_max, in the measure's units: 0.03 is three points),
// a severity (error blocks, warning only comments), and optionally a
// requirement that a drop be statistically significant before it counts.
//
// Evaluate compares the summary with its baseline — the baseline run scored
// in the same job (with confidence intervals and p-values), or a saved
// summary — and never passes a regression check silently: without a
// baseline the check reads "not checked: no baseline". The verdict is
// pass, warn or fail, with exit code 0, 0 or 1; every renderer prints the
// same verdict the exit code reports.
//
// Renderers: a terminal table, a pull-request comment (Markdown), JUnit XML
// (one test case per gate) and a self-contained HTML report with SVG plots.
// History keeps every summary of a series (a directory, or a JetStream
// object store in cluster mode) and reports trends and alerts.
package gate
