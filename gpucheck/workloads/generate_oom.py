"""Generation whose KV cache grows until it no longer fits the budget: a batch
of long generations with a random-weight Llama; the cache grows each token
(DynamicCache) until the caching allocator refuses (exit 3)."""
import torch
from transformers import StoppingCriteria, StoppingCriteriaList

import common


class Sample(StoppingCriteria):
    def __init__(self):
        self.n = 0

    def __call__(self, input_ids, scores, **kw):
        self.n += 1
        if self.n % 4 == 0:
            common.sample("token")
        return False


common.require_cuda()
common.set_budget()
model = common.llama(layers=12, hidden=1024, heads=16, inter=2816)
model.eval()
common.sample("loaded")
batch = 64
ids = torch.randint(0, 32000, (batch, 64), device="cuda")
s = Sample()
try:
    with torch.no_grad():
        model.generate(ids, max_new_tokens=8000, min_new_tokens=8000, do_sample=False,
                       stopping_criteria=StoppingCriteriaList([s]), pad_token_id=0)
except torch.cuda.OutOfMemoryError as e:
    common.oom_exit("at token %d" % s.n, e)
print("generated %d tokens without running out (raise BATCH or lower BUDGET_GIB)" % s.n)
