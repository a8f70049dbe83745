"""A small transformer (embedding, two encoder layers, a head) trained with
Adam on the CPU, gradients set to None at each zero_grad, for
record_roles_test.py: writes its own truth (the bytes of its parameters and
buffers, gradients and optimizer state at the last optimizer step) to
--truth FILE.

usage: train_roles_adam.py --truth FILE [--steps N]"""
import argparse
import json

import torch
import torch.nn as nn

D, HEADS, T, B, VOCAB = 64, 4, 32, 8, 256


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, D)
        self.register_buffer("positions", torch.randn(T, D) * 0.02)
        self.layers = nn.ModuleList(
            nn.TransformerEncoderLayer(D, HEADS, dim_feedforward=4 * D, dropout=0.0,
                                       batch_first=True) for _ in range(2))
        self.norm = nn.LayerNorm(D)
        self.head = nn.Linear(D, VOCAB)

    def forward(self, tokens):
        x = self.embed(tokens) + self.positions[:tokens.shape[1]]
        for layer in self.layers:
            x = layer(x)
        return self.head(self.norm(x))


def tensor_bytes(tensors):
    return sum(t.numel() * t.element_size() for t in tensors)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--truth", required=True)
    ap.add_argument("--steps", type=int, default=3)
    args = ap.parse_args()
    torch.manual_seed(0)
    model = Model()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    truth = {}
    for _ in range(args.steps):
        tokens = torch.randint(0, VOCAB, (B, T))
        opt.zero_grad(set_to_none=True)
        logits = model(tokens)
        loss = nn.functional.cross_entropy(logits.view(-1, VOCAB), tokens.view(-1))
        loss.backward()
        # What is alive in the optimizer step: the gradients now, the state
        # after it (the first step makes it).
        grads = tensor_bytes(p.grad for p in model.parameters() if p.grad is not None)
        opt.step()
        state = [v for s in opt.state.values() for v in s.values() if torch.is_tensor(v)]
        truth = {"parameter": tensor_bytes(list(model.parameters()) + list(model.buffers())),
                 "gradient": grads, "optimizer_state": tensor_bytes(state)}
    with open(args.truth, "w") as f:
        json.dump(truth, f)
    print("trained %d steps" % args.steps)


if __name__ == "__main__":
    main()
