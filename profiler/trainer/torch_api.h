#pragma once
// The LibTorch headers the trainer uses, in one place. Only the .cpp files that
// need tensors include this (LibTorch translation units are slow to compile);
// the public headers stay torch-free. Deliberately not <torch/torch.h>: the
// trainer has its own modules and optimizer, so the nn/optim/data headers would
// only cost build time.

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>
