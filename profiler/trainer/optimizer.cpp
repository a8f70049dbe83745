#include "optimizer.h"

#include <cmath>

namespace memscope::trainer {
namespace {

class GradientReadyHook final : public torch::autograd::FunctionPostHook {
public:
    GradientReadyHook(Adam& adam, size_t index) : adam_(adam), index_(index) {}
    torch::autograd::variable_list operator()(
        const torch::autograd::variable_list& outputs,
        const torch::autograd::variable_list& /*inputs*/) override {
        adam_.onGradientReady(index_);
        return outputs;
    }

private:
    Adam& adam_;
    size_t index_;
};

const void* storageOf(const at::Tensor& t) {
    return t.defined() && t.has_storage() ? t.storage().data() : nullptr;
}

}  // namespace

Adam::Adam(const std::vector<NamedParameter>& params, AdamOptions options, RunContext& ctx)
    : params_(params),
      options_(options),
      ctx_(ctx),
      exp_avg_(params.size()),
      exp_avg_sq_(params.size()),
      steps_(params.size(), 0) {}

Adam::~Adam() = default;

void Adam::ensureState(size_t i) {
    if (exp_avg_[i].defined()) return;
    at::NoGradGuard no_grad;
    exp_avg_[i] = at::zeros_like(params_[i].tensor);
    exp_avg_sq_[i] = at::zeros_like(params_[i].tensor);
    ctx_.tag(storageOf(exp_avg_[i]), Category::OptimizerState);
    ctx_.tag(storageOf(exp_avg_sq_[i]), Category::OptimizerState);
}

void Adam::update(const std::vector<size_t>& indexes) {
    if (indexes.empty()) return;
    at::NoGradGuard no_grad;
    std::vector<at::Tensor> p, g, m, v;
    for (size_t i : indexes) {
        ensureState(i);
        p.push_back(params_[i].tensor);
        g.push_back(params_[i].tensor.grad());
        m.push_back(exp_avg_[i]);
        v.push_back(exp_avg_sq_[i]);
    }
    // Every parameter in a group has taken the same number of steps.
    const int64_t t = ++steps_[indexes.front()];
    for (size_t i : indexes) steps_[i] = t;
    const double b1 = options_.beta1, b2 = options_.beta2;
    const double bc1 = 1.0 - std::pow(b1, static_cast<double>(t));
    const double bc2 = 1.0 - std::pow(b2, static_cast<double>(t));
    at::_foreach_mul_(m, b1);
    at::_foreach_add_(m, g, 1.0 - b1);
    at::_foreach_mul_(v, b2);
    at::_foreach_addcmul_(v, g, g, 1.0 - b2);
    std::vector<at::Tensor> denom = at::_foreach_sqrt(v);  // the foreach scratch
    at::_foreach_div_(denom, std::sqrt(bc2));
    at::_foreach_add_(denom, options_.eps);
    at::_foreach_addcdiv_(p, m, denom, -options_.lr / bc1);
}

void Adam::tagGradients() {
    for (const auto& p : params_) ctx_.tag(storageOf(p.tensor.grad()), Category::Gradient);
}

void Adam::step() {
    std::vector<size_t> with_grad;
    for (size_t i = 0; i < params_.size(); ++i)
        if (params_[i].tensor.grad().defined()) with_grad.push_back(i);
    update(with_grad);
    for (auto& p : params_) p.tensor.mutable_grad().reset();  // set_to_none
}

void Adam::runInBackward() {
    if (!accumulators_.empty()) return;
    for (size_t i = 0; i < params_.size(); ++i) {
        std::shared_ptr<torch::autograd::Node> acc =
            torch::autograd::impl::grad_accumulator(params_[i].tensor);
        acc->add_post_hook(std::make_unique<GradientReadyHook>(*this, i));
        accumulators_.push_back(std::move(acc));
    }
}

void Adam::onGradientReady(size_t i) {
    at::Tensor& grad = params_[i].tensor.mutable_grad();
    if (!grad.defined()) return;
    ctx_.tag(storageOf(grad), Category::Gradient);
    {
        PhaseScope scope(ctx_, PhaseKind::Optimizer, "adam " + params_[i].name);
        update({i});
    }
    grad.reset();  // freed now: gradients never pile up to the size of the model
}

}  // namespace memscope::trainer
