// Package cli parses the command lines of the migpro daemons and hook, which
// use the standard flag package: -h/--help prints the usage with every flag to
// stdout and exits 0, --version prints the build information and exits 0, and
// a bad flag prints one line to stderr and exits 2.
package cli
