// Package keyfile reads the YAML files evalgate is configured with (a
// retriever file, an LLM file) as go.yaml.in/yaml/v3 nodes, so that every
// problem is a *schema.InputError naming the file, the line and the key.
//
// Decode takes the file's single document, which must be a mapping;
// Mapping records its keys, refusing unknown and repeated ones; Scalar,
// Int, Float, Rate, Duration and Bool read one setting each, checking its
// type and range. Problems are collected (File.Err returns them all as a
// schema.ErrorList), so that one run shows every mistake of a file.
// Messages pass through File.Redact, so that no secret the caller has
// resolved reaches an error.
//
// A File is used by one parser at a time.
package keyfile
