"""Training a random-weight Llama with AdamW on random tokens.

  train.py settle [--steps N]  memory settles after the first step (Adam's
                               moments appear then), then stays flat
  train.py leak                every step keeps its loss with its graph, so
                               activations pile up until the budget runs out
                               (exit 3)
  train.py bench [--steps N]   time per step, for the shim's cost (step e)
"""
import argparse
import time

import torch

import common

ap = argparse.ArgumentParser()
ap.add_argument("mode", choices=["settle", "leak", "bench"])
ap.add_argument("--steps", type=int, default=60)
a = ap.parse_args()
common.require_cuda()
common.set_budget()
model = common.llama(layers=6, hidden=1024, heads=16, inter=2816, dtype=torch.float32)
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
common.sample("loaded")
kept = []
steps = a.steps if a.mode != "leak" else 100000
t0 = None
for step in range(steps):
    if step == 2:
        torch.cuda.synchronize()
        t0 = time.perf_counter()
    ids = torch.randint(0, 32000, (8, 256), device="cuda")
    try:
        out = model(ids, labels=ids)
        out.loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if a.mode == "leak":
            # The bug: keeping the loss (and its graph) for later logging.
            kept.append(model(ids, labels=ids).loss)
    except torch.cuda.OutOfMemoryError as e:
        common.oom_exit("at step %d" % step, e)
    common.sample("step")
torch.cuda.synchronize()
dt = (time.perf_counter() - t0) / max(1, steps - 2)
print("%s: %d steps, %.2f ms per step, reserved %.2f GiB" % (a.mode, steps, dt * 1e3, torch.cuda.memory_reserved() / (1 << 30)))
