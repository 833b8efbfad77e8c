# Workload simulator (replay/, migpro-lab replay; docs/simulate.md).
# `make simulate-report` runs every generated mix under every policy and
# writes each table and its charts under SIM_OUT (bin/, not tracked).
SIM_OUT  ?= $(BIN)/simulate-report
SIM_MIXES ?= small mixed llm pcie stream

.PHONY: simulate-report simulate-bench
simulate-report: build
	@mkdir -p $(SIM_OUT)
	@for m in $(SIM_MIXES); do \
		echo "== $$m"; \
		$(BIN)/migpro-lab replay --mix $$m --plot $(SIM_OUT)/$$m > $(SIM_OUT)/$$m.txt || exit 1; \
		cat $(SIM_OUT)/$$m.txt; \
	done

# One core, as the 5,000-job / 160-GPU target is stated.
simulate-bench:
	$(GO) test -run '^$$' -bench Stream -benchtime 1x -cpu 1 ./replay/

# Placement against its baselines (docs/simulate.md, Results): the repo's
# mixes and seeded online streams under first-fit, reachability and migpro,
# then the decision time of each policy on a busy 8-GPU node.
.PHONY: placement-bench
placement-bench:
	$(GO) test -run '^$$' -bench Policies -benchtime 1x ./replay/
	$(GO) test -run '^$$' -bench Decision -benchtime 20000x ./partitioner/
