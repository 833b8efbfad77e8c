# Security hardening checks; see docs/security.md.
#
#   make api-fuzz   bounded fuzz run of the local API's request decoding (part of make test)

API_FUZZTIME ?= 40000x

.PHONY: api-fuzz

api-fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzLocalAPIRequest$$' -fuzztime $(API_FUZZTIME) -fuzzminimizetime $(FUZZ_MINIMIZE) ./agent

TEST_TARGETS += api-fuzz
