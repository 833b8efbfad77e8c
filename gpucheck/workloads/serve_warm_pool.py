"""Serving with a warm pool: requests of varied batch and length, one after
another; the caching allocator's pool warms up, then serves from itself."""
import random
import time

import torch

import common

common.require_cuda()
common.set_budget()
model = common.llama(layers=8, hidden=1024, heads=16, inter=2816)
model.eval()
common.sample("loaded")
rng = random.Random(1)
end = time.time() + float(__import__("os").environ.get("SERVE_SECONDS", "20"))
n = 0
with torch.no_grad():
    while time.time() < end:
        b, length, new = rng.choice([1, 2, 4, 8]), rng.choice([32, 128, 512]), rng.choice([16, 32, 64])
        ids = torch.randint(0, 32000, (b, length), device="cuda")
        model.generate(ids, max_new_tokens=new, min_new_tokens=new, do_sample=False, pad_token_id=0)
        n += 1
        common.sample("request")
print("served %d requests, reserved %.2f GiB" % (n, torch.cuda.memory_reserved() / (1 << 30)))
