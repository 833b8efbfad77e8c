"""A model load: a ~0.55B-parameter Llama built on the CPU from a config, then
moved to the GPU tensor by tensor, as from_pretrained places shards."""
import time

import torch

import common

common.require_cuda()
model = common.llama(layers=8, hidden=2048, heads=16, inter=5632, device="cpu")
n = 0
for name, p in model.named_parameters():
    p.data = p.data.to("cuda")
    n += p.numel()
    common.sample("load")
torch.cuda.synchronize()
common.sample("loaded")
time.sleep(1.0)
common.sample("idle")
print("loaded %.2fB parameters, allocated %.2f GiB" % (n / 1e9, torch.cuda.memory_allocated() / (1 << 30)))
