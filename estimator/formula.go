package estimator

import (
	"errors"
	"fmt"
	"math"
)

// Model describes a transformer workload for the size formula. It counts the
// memory that scales with the model; the CUDA context is added by the caller
// with the rest of the overheads.
type Model struct {
	// Params is the parameter count.
	Params uint64 `json:"params"`
	// DTypeBytes is bytes per parameter and activation: 2 for fp16/bf16, 4
	// for fp32, 1 for int8.
	DTypeBytes float64 `json:"dtypeBytes"`
	// Training adds gradients (one copy of the weights), Adam's two moments
	// and, under mixed precision, an fp32 master copy, and activations.
	Training bool `json:"training,omitempty"`
	// Batch, Seq, Layers and Hidden size the KV cache for inference and the
	// activations for training. Zero skips that term.
	Batch  uint64 `json:"batch,omitempty"`
	Seq    uint64 `json:"seq,omitempty"`
	Layers uint64 `json:"layers,omitempty"`
	Hidden uint64 `json:"hidden,omitempty"`
}

// activationBytesPerToken is the activation memory per token, layer and
// hidden unit kept for the backward pass of a transformer block in 16-bit
// precision without recomputation (the attention-score term, which depends on
// the head count, is left out). It is the usual rule of thumb: 34 bytes.
const activationBytesPerToken = 34

// Breakdown is the formula's result by part.
type Breakdown struct {
	Weights     uint64 `json:"weights"`
	Gradients   uint64 `json:"gradients,omitempty"`
	Optimizer   uint64 `json:"optimizer,omitempty"`
	KVCache     uint64 `json:"kvCache,omitempty"`
	Activations uint64 `json:"activations,omitempty"`
}

// Total sums the parts.
func (b Breakdown) Total() uint64 {
	return b.Weights + b.Gradients + b.Optimizer + b.KVCache + b.Activations
}

// Estimate applies the formula.
//
//	inference: params·dtype + KV cache 2·batch·seq·layers·hidden·dtype
//	training:  params·dtype·2 (weights, gradients) + params·8 (Adam moments
//	           in fp32) + params·4 when dtype < 4 (fp32 master weights)
//	           + 34·batch·seq·layers·hidden (activations)
func (m Model) Estimate() (Breakdown, error) {
	if m.Params == 0 {
		return Breakdown{}, errors.New("model: params must be positive")
	}
	if m.DTypeBytes <= 0 || m.DTypeBytes > 8 || math.IsNaN(m.DTypeBytes) {
		return Breakdown{}, fmt.Errorf("model: dtype bytes %v, want 1, 2, 4 or 8", m.DTypeBytes)
	}
	p := float64(m.Params)
	tokens := float64(m.Batch) * float64(m.Seq) * float64(m.Layers) * float64(m.Hidden)
	var b Breakdown
	b.Weights = ceil(p * m.DTypeBytes)
	if !m.Training {
		b.KVCache = ceil(2 * tokens * m.DTypeBytes)
		return b, checkFinite(b)
	}
	b.Gradients = b.Weights
	opt := p * 8
	if m.DTypeBytes < 4 {
		opt += p * 4
	}
	b.Optimizer = ceil(opt)
	b.Activations = ceil(activationBytesPerToken * tokens * m.DTypeBytes / 2)
	return b, checkFinite(b)
}

func ceil(f float64) uint64 {
	if f >= math.MaxUint64/8 {
		return math.MaxUint64 / 8 // saturate; checkFinite reports it
	}
	return uint64(math.Ceil(f))
}

func checkFinite(b Breakdown) error {
	for _, v := range []uint64{b.Weights, b.Gradients, b.Optimizer, b.KVCache, b.Activations} {
		if v >= math.MaxUint64/8 {
			return errors.New("model: size overflows; check params and shape")
		}
	}
	return nil
}
