"""A Linear and a softmax on CPU, a few steps: the ops that make its memory
are aten::addmm (the Linear's output, 64 x 700 floats = 179200 B, a size
nothing else here has before it) and aten::_softmax (the same size after it).
Used by record_ops_test.py and the recording benchmark."""
import sys

import torch

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 2
torch.manual_seed(0)
model = torch.nn.Linear(300, 700)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(64, 300)
for _ in range(steps):
    opt.zero_grad()
    y = torch.softmax(model(x), dim=1)
    y.sum().backward()
    opt.step()
print("trained %d steps" % steps)
