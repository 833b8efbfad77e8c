# End-to-end tests against real podman, containerd and kubelet on simulated
# GPUs; see docs/e2e.md. Needs root. Everything built or written lands in
# $(MIGPRO_E2E_CACHE) (default /var/cache/migpro-e2e), so a warm run of
# e2e-deps takes about a second.
#
#   make e2e-deps                 install and build everything
#   make e2e                      e2e-deps, then all e2e tests
#   make e2e E2E_RUN=TestSmoke    only tests matching a -run pattern
#   make e2e E2E_RUN='^(TestA|TestB)$'   the pattern goes to -run as written
#   make e2e E2E_LOCK=/tmp/x.lock  hold a flock on that file while the tests
#                                 run, for checkouts sharing one machine (the
#                                 tests use global paths: /etc/cdi, the
#                                 kubelet's plugin directory)

E2E_TIMEOUT ?= 40m
E2E_RUN     ?=
E2E_FLAGS   ?= -v
E2E_LOCK    ?=

.PHONY: e2e e2e-deps e2e-deps-podman e2e-deps-containerd e2e-deps-kube e2e-deps-etcd e2e-deps-nvidia-cdi-hook e2e-deps-helm

e2e-deps: e2e-deps-podman e2e-deps-containerd e2e-deps-kube e2e-deps-etcd e2e-deps-nvidia-cdi-hook e2e-deps-helm
	@echo "[e2e] dependencies ready in $${MIGPRO_E2E_CACHE:-/var/cache/migpro-e2e}"

e2e-deps-podman:
	@bash e2e/setup/podman.sh

e2e-deps-containerd:
	@bash e2e/setup/containerd.sh

e2e-deps-kube:
	@bash e2e/setup/kubelet.sh

e2e-deps-etcd:
	@bash e2e/setup/etcd.sh

e2e-deps-nvidia-cdi-hook:
	@bash e2e/setup/nvidia-cdi-hook.sh

e2e-deps-helm:
	@bash e2e/setup/helm.sh

e2e: e2e-deps
	@echo "[e2e] go test -tags e2e ./e2e/... (timeout $(E2E_TIMEOUT)$(if $(E2E_RUN), -run $(value E2E_RUN)))"
	@start=$$(date +%s); \
	$(if $(E2E_LOCK),flock $(E2E_LOCK)) $(GO) test -tags e2e -count=1 -timeout $(E2E_TIMEOUT) $(E2E_FLAGS) $(if $(E2E_RUN),-run '$(value E2E_RUN)') ./e2e/... ; \
	rc=$$?; echo "[e2e] finished in $$(( $$(date +%s) - start ))s, exit $$rc"; exit $$rc

TEST_TARGETS += e2e
