package agent

import "net/http"

// mountExtraRoutes adds the routes of the other parts served on the local
// API socket: telemetry registration from the hook, migctl top, and the
// predictor's marks.
func (a *Agent) mountExtraRoutes(mux *http.ServeMux) {
	if a.watch != nil {
		a.watch.routes(mux)
	}
}
