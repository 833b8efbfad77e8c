"""The same computation and the same failures with the shim as without: a
seeded forward and backward pass whose checksums are printed, a caught
out-of-memory error past the budget, then exit 7. Step (f) runs it twice and
compares stdout, stderr and the exit code."""
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402

import common  # noqa: E402

torch.use_deterministic_algorithms(True, warn_only=True)
common.require_cuda()
common.set_budget()
model = common.llama(layers=2, hidden=512, heads=8, inter=1408, dtype=torch.float32, attn="eager")
ids = torch.randint(0, 32000, (4, 128), device="cuda")
out = model(ids, labels=ids)
out.loss.backward()
g = sum(float(p.grad.double().abs().sum()) for p in model.parameters())
print("loss %.5f grad-sum %.2f logits-sum %.2f" % (float(out.loss), g, float(out.logits.double().sum())))
try:
    torch.empty(common.budget_bytes() * 2, dtype=torch.uint8, device="cuda")
    print("no OOM past the budget")
except torch.cuda.OutOfMemoryError as e:
    print("OOM past the budget: %s" % type(e).__name__)
try:
    torch.zeros(1, device="cuda:99")
except Exception as e:
    print("bad device: %s" % type(e).__name__)
sys.exit(7)
