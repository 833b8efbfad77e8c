package agent

import "net/http"

// mountExtraRoutes adds the routes of the other parts served on the local
// API socket (telemetry registration and top).
func (a *Agent) mountExtraRoutes(mux *http.ServeMux) {}
