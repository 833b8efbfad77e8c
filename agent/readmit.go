package agent

import (
	"context"

	"k8s.io/client-go/kubernetes"

	"github.com/migpro/migpro/readmit"
)

// startReadmit hands every mark of a pod's container to readmission: the
// recommendation is stored in the API server, the pod gets an Event and an
// annotation, and it is evicted so its controller recreates it, which the
// admission webhook moves to the larger profile.
func (a *Agent) startReadmit(cs kubernetes.Interface) {
	r := readmit.NewMarker(cs, readmit.WithDomain(a.cfg.Domain), readmit.WithNodeName(a.cfg.NodeName),
		readmit.WithLogger(a.log.WithField("component", "readmit")))
	a.OnMark(func(m Mark) {
		// Handle may wait a long time on a PodDisruptionBudget: never hold
		// up other subscribers.
		go func() {
			if _, err := r.Handle(context.Background(), toReadmitMark(m)); err != nil {
				a.log.WithError(err).WithField("pod", m.Container.PodNamespace+"/"+m.Container.PodName).Warn("readmission failed")
			}
		}()
	})
}

func toReadmitMark(m Mark) readmit.Mark {
	return readmit.Mark{PodNamespace: m.Container.PodNamespace, PodName: m.Container.PodName, PodUID: m.Container.PodUID,
		ContainerName: m.Container.ContainerName, FromProfile: m.Profile, ToProfile: m.Decision.Profile,
		ForecastBytes: m.Decision.Forecast, Reason: string(m.Decision.Reason), Fits: m.Decision.Fits}
}
