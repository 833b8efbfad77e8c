"""Shared by the PyTorch workloads of the GPU check.

Every workload logs what PyTorch sees next to what the shim and NVML see:
at each sample it writes one CSV row to $WORKLOAD_LOG with the wall-clock
time, torch.cuda.memory_allocated(), torch.cuda.memory_reserved() and the
device's used memory from torch.cuda.mem_get_info() (cuMemGetInfo, which also
makes the shim send a sample, so the two line up). The check's analysis
matches these rows to migctl record's samples by time.

Models are built from a Transformers config with random weights: nothing is
downloaded. BUDGET_GIB (default 8) caps PyTorch's caching allocator with
torch.cuda.set_per_process_memory_fraction, so an out-of-memory error is a
real one from the allocator without touching MIG.
"""
import os
import sys
import time

import torch

LOG = None


def log_open():
    global LOG
    path = os.environ.get("WORKLOAD_LOG")
    if path:
        LOG = open(path, "w", buffering=1)
        LOG.write("unix,tag,torch_allocated,torch_reserved,device_used\n")


def sample(tag):
    """Log one row; cheap enough to call every step."""
    if LOG is None:
        return
    free, total = torch.cuda.mem_get_info()
    LOG.write("%.3f,%s,%d,%d,%d\n" % (time.time(), tag, torch.cuda.memory_allocated(),
                                      torch.cuda.memory_reserved(), total - free))


def budget_bytes():
    return int(float(os.environ.get("BUDGET_GIB", "8")) * (1 << 30))


def set_budget():
    """Cap the caching allocator at BUDGET_GIB of the device."""
    total = torch.cuda.get_device_properties(0).total_memory
    frac = min(1.0, budget_bytes() / total)
    torch.cuda.set_per_process_memory_fraction(frac, 0)
    print("budget %.1f GiB (fraction %.4f of %.1f GiB)" % (budget_bytes() / (1 << 30), frac, total / (1 << 30)))
    return frac


def require_cuda():
    if not torch.cuda.is_available():
        print("torch.cuda is not available")
        sys.exit(2)
    torch.manual_seed(0)
    torch.cuda.manual_seed_all(0)
    log_open()
    sample("start")


def llama(layers=8, hidden=1024, heads=16, inter=2816, vocab=32000, dtype=torch.bfloat16, device="cuda", attn=None):
    """A Llama-shaped causal LM with random weights from a config; attn
    names the attention implementation ("eager" is deterministic)."""
    from transformers import LlamaConfig, LlamaForCausalLM
    cfg = LlamaConfig(hidden_size=hidden, intermediate_size=inter, num_hidden_layers=layers,
                      num_attention_heads=heads, num_key_value_heads=heads, vocab_size=vocab,
                      max_position_embeddings=8192)
    if attn:
        cfg._attn_implementation = attn
    with torch.device(device):
        model = LlamaForCausalLM(cfg)
    return model.to(dtype)


def oom_exit(where, err):
    """Report a real out-of-memory error and exit with 3, as a job that dies of it."""
    sample("oom")
    print("OOM %s: %s" % (where, str(err).splitlines()[0]))
    sys.exit(3)
