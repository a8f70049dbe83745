"""A ResNet-style CNN trained on CPU, written as a user would: a stem, then
a body (nn.Sequential) of residual blocks in stages whose width and
resolution differ, with a checkpointing policy applied by hand
(hand_policies.py):

  full          every activation kept
  block         each block of the body checkpointed
  sequential:K  checkpoint_sequential(self.body, K, x)
  every:N       every N-th block checkpointed (torchtitan's counting)

Prints the loss of each step. usage: policy_cnn.py [--policy P] [--steps N]
[--blocks-per-stage N] [--width C] [--image S] [--batch B]"""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint_sequential

import hand_policies as hp


class Residual(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.skip = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
                     if stride != 1 or cin != cout else nn.Identity())

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(y)) + self.skip(x))


class ResNet(nn.Module):
    def __init__(self, width, per_stage, policy):
        super().__init__()
        self.policy = policy
        self.stem = nn.Sequential(nn.Conv2d(3, width, 3, 1, 1, bias=False), nn.BatchNorm2d(width),
                                  nn.ReLU())
        blocks, cin = [], width
        for stage in range(3):
            cout = width * 2 ** stage
            for i in range(per_stage):
                blocks.append(Residual(cin, cout, 2 if (i == 0 and stage > 0) else 1))
                cin = cout
        self.body = nn.Sequential(*blocks)
        self.head = nn.Linear(cin, 10)
        n = len(self.body)
        self.checkpointed = set()
        if policy == "block":
            self.checkpointed = set(range(n))
        elif policy.startswith("every:"):
            self.checkpointed = hp.every_nth(int(policy[6:]), n)

    def forward(self, x):
        x = self.stem(x)
        if self.policy.startswith("sequential:"):
            x = checkpoint_sequential(self.body, int(self.policy[11:]), x)
        else:
            for i, block in enumerate(self.body):
                x = hp.checkpointed(block, x) if i in self.checkpointed else block(x)
        return self.head(F.adaptive_avg_pool2d(x, 1).flatten(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--policy", default="full")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--setup", help="code to run after the model is built, with `model` in scope "
                    "(whatif --emit pytorch's output)")
    ap.add_argument("--blocks-per-stage", type=int, default=3)
    ap.add_argument("--width", type=int, default=16)
    ap.add_argument("--image", type=int, default=32)
    ap.add_argument("--batch", type=int, default=16)
    args = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = ResNet(args.width, args.blocks_per_stage, args.policy)
    hp.paste(args.setup, model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for step in range(args.steps):
        x = torch.randn(args.batch, 3, args.image, args.image)
        y = torch.randint(0, 10, (args.batch,))
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        print("step %d loss %.6f" % (step, loss.item()), flush=True)


if __name__ == "__main__":
    main()
