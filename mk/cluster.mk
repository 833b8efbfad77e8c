# A real one-node Kubernetes cluster to try migpro on, without writing code:
# the end-to-end suite's control plane (etcd, kube-apiserver,
# controller-manager, scheduler) and a kubelet on containerd, started from
# e2e/harness by e2e/clusterup. Needs root; e2e-deps builds what it runs.
#
#   make cluster-up     start it in the background; prints the kubeconfig path
#   make cluster-down   stop it and undo the kubelet's changes to the host
#
# The cluster has no pod network and no kube-proxy: install the chart with
# hostNetwork=true and KUBERNETES_SERVICE_HOST/PORT in extraEnv
# (docs/install.md, "Try it on a local cluster").

CLUSTER_DIR ?= $(BIN)/cluster

.PHONY: cluster-up cluster-down
cluster-up: e2e-deps
	@if [ -f $(CLUSTER_DIR)/pid ] && kill -0 $$(cat $(CLUSTER_DIR)/pid) 2>/dev/null; then \
		echo "[cluster] already up (pid $$(cat $(CLUSTER_DIR)/pid)): export KUBECONFIG=$(CLUSTER_DIR)/kubeconfig"; exit 0; fi
	@mkdir -p $(CLUSTER_DIR) && rm -f $(CLUSTER_DIR)/kubeconfig
	$(GO) build -o $(CLUSTER_DIR)/clusterup ./e2e/clusterup
	@nohup $(CLUSTER_DIR)/clusterup $(CLUSTER_DIR)/kubeconfig >$(CLUSTER_DIR)/log 2>&1 & echo $$! >$(CLUSTER_DIR)/pid
	@for i in $$(seq 1 180); do \
		if [ -s $(CLUSTER_DIR)/kubeconfig ]; then grep '^clusterup: node' $(CLUSTER_DIR)/log; \
			echo "[cluster] up; kubeconfig: $(CLUSTER_DIR)/kubeconfig"; \
			echo "[cluster]   export KUBECONFIG=$(CLUSTER_DIR)/kubeconfig; $${MIGPRO_E2E_CACHE:-/var/cache/migpro-e2e}/bin/kubectl get nodes"; \
			echo "[cluster] stop it with: make cluster-down (log: $(CLUSTER_DIR)/log)"; exit 0; fi; \
		if ! kill -0 $$(cat $(CLUSTER_DIR)/pid) 2>/dev/null; then \
			echo "[cluster] failed to start:"; tail -20 $(CLUSTER_DIR)/log; rm -f $(CLUSTER_DIR)/pid; exit 1; fi; \
		sleep 1; done; echo "[cluster] not up after 180 s; see $(CLUSTER_DIR)/log"; exit 1

cluster-down:
	@if [ ! -f $(CLUSTER_DIR)/pid ] || ! kill -0 $$(cat $(CLUSTER_DIR)/pid) 2>/dev/null; then \
		echo "[cluster] not running"; rm -f $(CLUSTER_DIR)/pid $(CLUSTER_DIR)/kubeconfig; exit 0; fi
	@pid=$$(cat $(CLUSTER_DIR)/pid); kill -TERM $$pid; \
	for i in $$(seq 1 120); do kill -0 $$pid 2>/dev/null || break; sleep 1; done; \
	if kill -0 $$pid 2>/dev/null; then echo "[cluster] still stopping after 120 s (pid $$pid; log $(CLUSTER_DIR)/log)"; exit 1; fi; \
	rm -f $(CLUSTER_DIR)/pid $(CLUSTER_DIR)/kubeconfig; echo "[cluster] down"
