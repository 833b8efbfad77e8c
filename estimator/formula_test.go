package estimator

import (
	"strings"
	"testing"
)

func TestModelEstimateInference(t *testing.T) {
	// A 7B model in fp16 with a 4k-token KV cache for batch 1, 32 layers of
	// 4096: 14 GB of weights and 2·1·4096·32·4096·2 bytes = 2 GiB of cache.
	m := Model{Params: 7e9, DTypeBytes: 2, Batch: 1, Seq: 4096, Layers: 32, Hidden: 4096}
	b, err := m.Estimate()
	if err != nil {
		t.Fatal(err)
	}
	if b.Weights != 14e9 || b.KVCache != 2<<30 || b.Gradients != 0 || b.Optimizer != 0 || b.Activations != 0 {
		t.Errorf("breakdown %+v", b)
	}
	if b.Total() != 14e9+2<<30 {
		t.Errorf("total %d", b.Total())
	}
}

func TestModelEstimateTraining(t *testing.T) {
	// 1B parameters, bf16, mixed precision Adam: 2 weights + 2 gradients +
	// 8 moments + 4 master = 16 bytes per parameter; activations
	// 34·8·512·24·2048 bytes.
	m := Model{Params: 1e9, DTypeBytes: 2, Training: true, Batch: 8, Seq: 512, Layers: 24, Hidden: 2048}
	b, err := m.Estimate()
	if err != nil {
		t.Fatal(err)
	}
	if b.Weights+b.Gradients+b.Optimizer != 16e9 {
		t.Errorf("states %+v, want 16 GB", b)
	}
	if want := uint64(34 * 8 * 512 * 24 * 2048); b.Activations != want || b.KVCache != 0 {
		t.Errorf("activations %d, want %d (kv %d)", b.Activations, want, b.KVCache)
	}
	// Full fp32 training has no separate master copy.
	m.DTypeBytes = 4
	b, _ = m.Estimate()
	if b.Weights+b.Gradients+b.Optimizer != 16e9 {
		t.Errorf("fp32 states %+v, want 16 GB", b)
	}
}

func TestModelEstimateRejects(t *testing.T) {
	for _, tc := range []struct {
		m    Model
		want string
	}{
		{Model{DTypeBytes: 2}, "params"},
		{Model{Params: 1}, "dtype"},
		{Model{Params: 1, DTypeBytes: 16}, "dtype"},
		{Model{Params: 1 << 62, DTypeBytes: 8}, "overflows"},
	} {
		if _, err := tc.m.Estimate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.m, err, tc.want)
		}
	}
}
