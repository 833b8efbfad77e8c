"""A vLLM-like start: load the weights, run a profiling forward pass at the
largest batch, empty_cache(), then preallocate the KV cache in one call so
the pool reaches 90% of the budget, and serve from it."""
import time

import torch

import common

common.require_cuda()
common.set_budget()
model = common.llama(layers=12, hidden=2048, heads=16, inter=5632)
model.eval()
common.sample("loaded")
with torch.no_grad():
    ids = torch.randint(0, 32000, (16, 1024), device="cuda")
    model(ids)
    torch.cuda.synchronize()
common.sample("profiled")
del ids
torch.cuda.empty_cache()
common.sample("emptied")
target = int(0.90 * common.budget_bytes())
kv = target - torch.cuda.memory_reserved()
if kv <= 0:
    print("weights and context leave no room for a KV cache in the budget")
    raise SystemExit(4)
cache = torch.empty(kv, dtype=torch.uint8, device="cuda")
common.sample("kv-cache")
for _ in range(20):
    time.sleep(0.2)
    common.sample("serving")
print("KV cache %.2f GiB, reserved %.2f GiB of a %.2f GiB budget" % (
    kv / (1 << 30), torch.cuda.memory_reserved() / (1 << 30), common.budget_bytes() / (1 << 30)))
