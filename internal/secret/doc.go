// Package secret expands environment references in configuration files
// and keeps the values they bring in out of everything shown or stored.
//
// A file such as a retriever file or an LLM file names its secrets as
// ${NAME} or ${NAME:-default}; $$ is a dollar sign and a $ before anything
// else is itself. An Expander resolves the references of one file with a
// given environment lookup and remembers every value that came from the
// environment: those values are secrets. A Redactor built from them
// replaces each one, and the forms it takes once escaped into a URL or a
// JSON string (servers echo headers and URLs back in error bodies), by
// "[redacted]".
//
// For templates, Placeholders puts an opaque placeholder in place of each
// reference (letters and digits with a random nonce per file, so no query
// text can forge one); the template runs, and the fill replacer puts the
// values into its output. A value holding "{{" is thus never interpreted
// as template text, and text holding "${TOKEN}" that reaches a template
// through its data never expands.
//
// The package holds no global state and starts no goroutine; an Expander
// is used by one parser at a time, a Redactor is safe for concurrent use.
package secret
