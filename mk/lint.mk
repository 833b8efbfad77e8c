# golangci-lint, pinned, built from the Go module proxy into $(TOOLS) by
# make itself; `make lint` runs it with .golangci.yml after gofmt and vet.

GOLANGCI_VERSION ?= v2.15.0
TOOLS            ?= $(BIN)/tools
GOLANGCI         := $(TOOLS)/golangci-lint-$(GOLANGCI_VERSION)

$(GOLANGCI):
	@echo "[lint] building golangci-lint $(GOLANGCI_VERSION) (a few minutes cold)"
	@mkdir -p $(TOOLS)
	GOBIN=$(TOOLS)/.build-$(GOLANGCI_VERSION) CGO_ENABLED=0 $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_VERSION)
	mv $(TOOLS)/.build-$(GOLANGCI_VERSION)/golangci-lint $@
	rmdir $(TOOLS)/.build-$(GOLANGCI_VERSION)

# --allow-serial-runners: a second golangci-lint on the machine (an editor,
# another checkout) makes this one wait for it, not fail.
.PHONY: golangci-lint
golangci-lint: $(GOLANGCI)
	$(GOLANGCI) run --allow-serial-runners ./...
