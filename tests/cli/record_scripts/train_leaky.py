"""A plain training loop with the two commonest leaks, for record_leaks_test.py:
--keep-logits appends every step's logits (detached) to a list kept for
later inspection, --hook-stores has a forward hook on the last block that
stores its output each call. Without either, it does not grow. Writes the
bytes each leak keeps per step to --truth FILE.

usage: train_leaky.py --truth FILE [--keep-logits] [--hook-stores] [--steps N]"""
import argparse
import json

import torch
import torch.nn as nn

B, T, D, VOCAB = 8, 64, 128, 512


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(D, 4 * D)
        self.fc2 = nn.Linear(4 * D, D)

    def forward(self, x):
        return x + self.fc2(torch.relu(self.fc1(x)))


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, D)
        self.blocks = nn.ModuleList(Block() for _ in range(4))
        self.head = nn.Linear(D, VOCAB)

    def forward(self, tokens):
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x)
        return self.head(x)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--truth", required=True)
    ap.add_argument("--keep-logits", action="store_true")
    ap.add_argument("--hook-stores", action="store_true")
    ap.add_argument("--steps", type=int, default=10)
    args = ap.parse_args()
    torch.manual_seed(0)
    model = Model()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    kept, stored = [], []
    if args.hook_stores:
        model.blocks[3].register_forward_hook(lambda m, i, out: stored.append(out.detach()))
    for _ in range(args.steps):
        tokens = torch.randint(0, VOCAB, (B, T))
        opt.zero_grad(set_to_none=True)
        logits = model(tokens)
        loss = nn.functional.cross_entropy(logits.view(-1, VOCAB), tokens.view(-1))
        loss.backward()
        opt.step()
        if args.keep_logits:
            kept.append(logits.detach())  # the leak: every step's logits stay alive
    per_step = 0
    if args.keep_logits:
        per_step += B * T * VOCAB * 4
    if args.hook_stores:
        per_step += B * T * D * 4
    with open(args.truth, "w") as f:
        json.dump({"growth_bytes_per_step": per_step}, f)
    print("trained", args.steps, "steps")


if __name__ == "__main__":
    main()
