// Package quietlog gives the logger that says nothing, for tests and for
// commands that drive a library whose log lines are not their user's
// business. Every constructor takes its logger; this is the one to pass
// when nothing should be logged.
package quietlog
