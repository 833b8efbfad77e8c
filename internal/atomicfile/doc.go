// Package atomicfile replaces a file so that a reader, or a process that
// crashes midway, only ever sees the old content or the new one: it writes a
// temp file in the same directory and renames it over the target.
package atomicfile
