# deploy/kubernetes/ is the chart deploy/helm/migpro rendered with its
# defaults, without cert-manager and without a generated certificate (a
# rendered certificate would be a shared secret). `make manifests` re-renders
# it with helm from `make e2e-deps-helm`; TestManifestsMatchChart in deploy/
# fails when they differ.
HELM ?= $${MIGPRO_E2E_CACHE:-/var/cache/migpro-e2e}/bin/helm
MANIFEST_FLAGS = --namespace migpro-system --set admission.certManager=false --set admission.generateCert=false

.PHONY: manifests
manifests:
	@bash e2e/setup/helm.sh
	@tmp=$$(mktemp -d) && \
	$(HELM) template migpro deploy/helm/migpro $(MANIFEST_FLAGS) --output-dir $$tmp >/dev/null && \
	rm -f deploy/kubernetes/*.yaml && cp $$tmp/migpro/templates/*.yaml deploy/kubernetes/ && \
	rm -rf $$tmp && echo "[manifests] deploy/kubernetes/ rendered from deploy/helm/migpro"
