# Predictor and estimator: scoring, benchmark and trace regeneration.
.PHONY: predictor-eval predictor-bench predictor-traces

# Baseline and migpro side by side on the checked-in traces, then the
# framework-shaped families, their ablation and the stress set (10 GiB instance),
# and issue 29's shapes, tuned and held out (10 GB instance).
predictor-eval:
	$(GO) run ./cmd/migctl predict --capacity 10Gi --algorithm both --gpu h100-80gb predictor/testdata
	$(GO) run ./cmd/migctl predict --capacity 10Gi --algorithm both --horizon 120 predictor/testdata
	$(GO) test -count=1 -v -run TestAblation ./predictor/eval
	$(GO) test -count=1 -v -run 'TestRealFamilies$$|TestFlanT5Step|TestRealAblation|TestJumpGateOnPreallocation|TestStressFamilies' ./predictor/eval
	$(GO) test -count=1 -v -run 'TestTunedShapes|TestHeldOutShapes' ./predictor/eval

# Cost per sample (target under 1 µs, 0 allocations).
predictor-bench:
	$(GO) test -run '^$$' -bench Observe -benchmem ./predictor

# Rewrite predictor/testdata from the generator.
predictor-traces:
	$(GO) generate ./predictor

# The fuzz targets (predictor-fuzz: trace files and telemetry samples;
# readmit-fuzz) are in mk/fuzz.mk.
