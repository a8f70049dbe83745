# A plain PyTorch training loop with no memscope code, shaped like a small
# transformer: an embedding, a ModuleList of 4 blocks (attention-like linear
# layers, then an MLP), a head. Blocks 1 and 3 are checkpointed (recomputed in
# backward); Adam; zero_grad at the start of each step.
#
# usage: train_blocks.py [STEPS] [--time]
#   --time: print the median step time, wall and the main thread's CPU time
import statistics
import sys
import time

import torch
from torch.utils.checkpoint import checkpoint

D, T, B, VOCAB = 64, 32, 16, 128
CHECKPOINTED = (1, 3)


class Attention(torch.nn.Module):
    def __init__(self, d):
        super().__init__()
        self.q = torch.nn.Linear(d, d)
        self.k = torch.nn.Linear(d, d)
        self.v = torch.nn.Linear(d, d)
        self.proj = torch.nn.Linear(d, d)

    def forward(self, x):
        q, k, v = self.q(x), self.k(x), self.v(x)
        w = torch.softmax(q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5, dim=-1)
        return self.proj(w @ v)


class Block(torch.nn.Module):
    def __init__(self, d):
        super().__init__()
        self.ln1 = torch.nn.LayerNorm(d)
        self.attn = Attention(d)
        self.ln2 = torch.nn.LayerNorm(d)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(d, 4 * d), torch.nn.GELU(),
                                       torch.nn.Linear(4 * d, d))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class Net(torch.nn.Module):
    def __init__(self, n=4):
        super().__init__()
        self.embed = torch.nn.Embedding(VOCAB, D)
        self.blocks = torch.nn.ModuleList(Block(D) for _ in range(n))
        self.head = torch.nn.Linear(D, VOCAB)

    def forward(self, tokens):
        x = self.embed(tokens)
        for i, block in enumerate(self.blocks):
            x = checkpoint(block, x) if i in CHECKPOINTED else block(x)
        return self.head(x)


steps = int(sys.argv[1]) if len(sys.argv) > 1 else 3
torch.manual_seed(0)
model = Net()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
tokens = torch.randint(0, VOCAB, (B, T))
times, cpu = [], []
for _ in range(steps):
    began, began_cpu = time.perf_counter(), time.thread_time()
    opt.zero_grad()
    logits = model(tokens)
    loss = torch.nn.functional.cross_entropy(logits.view(-1, VOCAB), tokens.view(-1))
    loss.backward()
    opt.step()
    times.append(time.perf_counter() - began)
    cpu.append(time.thread_time() - began_cpu)
print("trained", steps, "steps")
if "--time" in sys.argv:
    # The first steps warm up (allocator, lazy init): left out.
    warm = min(3, steps - 1)
    print("median step %.3f ms wall %.3f ms cpu"
          % (1e3 * statistics.median(times[warm:]), 1e3 * statistics.median(cpu[warm:])))
