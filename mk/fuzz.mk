# Every fuzz target, in one place. `make fuzz` runs them all; the ones marked
# (make test) are also part of make test. Each is bounded by an execution
# count, never a duration (the Makefile says why); FUZZ_MINIMIZE bounds each
# minimisation the same way. Raise a count on the command line to fuzz
# longer, e.g. make predictor-fuzz PREDICTOR_FUZZTIME=5000000x.
#
#   hook-fuzz       the shim's telemetry datagrams and the OCI hook's input (make test)
#   api-fuzz        the agent's local API request decoding (make test)
#   readmit-fuzz    the webhook's recommendation parsing (make test)
#   predictor-fuzz  trace files and telemetry samples

DECODE_FUZZTIME    ?= 300000x
HOOK_FUZZTIME      ?= 100000x
API_FUZZTIME       ?= 40000x
# A planted ConfigMap's data must never panic the webhook or patch anything
# but a container's MIG request.
READMIT_FUZZTIME   ?= 3000x
PREDICTOR_FUZZTIME ?= 100000x

.PHONY: fuzz hook-fuzz api-fuzz readmit-fuzz predictor-fuzz
fuzz: hook-fuzz api-fuzz readmit-fuzz predictor-fuzz

hook-fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(DECODE_FUZZTIME) -fuzzminimizetime $(FUZZ_MINIMIZE) ./telemetry
	$(GO) test -run '^$$' -fuzz '^FuzzHookInput$$' -fuzztime $(HOOK_FUZZTIME) -fuzzminimizetime $(FUZZ_MINIMIZE) ./hook

api-fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzLocalAPIRequest$$' -fuzztime $(API_FUZZTIME) -fuzzminimizetime $(FUZZ_MINIMIZE) ./agent

readmit-fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzRecommendation$$' -fuzztime $(READMIT_FUZZTIME) -fuzzminimizetime $(FUZZ_MINIMIZE) ./readmit

predictor-fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzRead$$' -fuzztime $(PREDICTOR_FUZZTIME) -fuzzminimizetime $(FUZZ_MINIMIZE) ./predictor/trace
	$(GO) test -run '^$$' -fuzz '^FuzzObserve$$' -fuzztime $(PREDICTOR_FUZZTIME) -fuzzminimizetime $(FUZZ_MINIMIZE) ./predictor

TEST_TARGETS += hook-fuzz api-fuzz readmit-fuzz
