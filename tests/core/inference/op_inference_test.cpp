// Ops inferred from a snapshot's C++ frames: the op names as PyTorch spells
// them, the innermost op that is not an allocation helper, and when the
// trace is left alone.
#include "memscope/inference/op_inference.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <vector>

#include "memscope/inference/inference.h"
#include "memscope/model/op_attribution.h"

namespace memscope {
namespace {

TEST(OpInference, OverloadsAreCutAsPyTorchNamesThem) {
    const std::vector<std::pair<std::string, std::string>> names = {
        {"mm", "mm"},
        {"add_Tensor", "add"},
        {"add__Tensor", "add_"},  // in place
        {"mul_Scalar", "mul"},
        {"mul_Tensor", "mul"},
        {"_softmax", "_softmax"},
        {"softmax_int", "softmax"},
        {"empty_memory_format", "empty"},
        {"empty_strided", "empty_strided"},
        {"empty_like", "empty_like"},
        {"new_empty", "new_empty"},
        {"new_zeros", "new_zeros"},
        {"resize_", "resize_"},
        {"set__source_Storage", "set_"},
        {"scaled_dot_product_attention", "scaled_dot_product_attention"},
        {"_scaled_dot_product_efficient_attention", "_scaled_dot_product_efficient_attention"},
        {"_efficient_attention_forward", "_efficient_attention_forward"},
        {"pow_Tensor_Scalar", "pow"},
        {"mean_dim", "mean"},
        {"sum_dim_IntList", "sum"},
        {"where_self", "where"},
        {"where_ScalarSelf", "where"},
        {"to_dtype_layout", "to"},
        {"to_dtype", "to"},
        {"to_device", "to"},
        {"_to_copy", "_to_copy"},
        {"arange_start_out", "arange"},
        {"mm_out", "mm"},
        {"index_Tensor", "index"},
        {"index_put_", "index_put_"},
        {"_index_put_impl_", "_index_put_impl_"},
        {"nonzero_numpy", "nonzero_numpy"},
        {"clamp_min", "clamp_min"},
        {"scalar_tensor", "scalar_tensor"},
        {"linalg_vector_norm", "linalg_vector_norm"},
        {"cosine_similarity", "cosine_similarity"},
        {"masked_fill_Scalar", "masked_fill"},
        {"rsub_Scalar", "rsub"},
        {"div_Tensor_mode", "div"},
        {"flatten_using_ints", "flatten"},
        {"select_int", "select"},
        {"slice_Tensor", "slice"},
        {"view_dtype", "view"},
        {"squeeze_dims", "squeeze"},
        {"zeros_names", "zeros"},
        {"randint_low", "randint"},
        {"bernoulli_p", "bernoulli"},
        {"bernoulli__float", "bernoulli_"},
        {"scatter_src", "scatter"},
        {"scatter_reduce_two", "scatter_reduce"},
        {"var_correction", "var"},
        {"upsample_nearest2d_vec", "upsample_nearest2d"},
        {"_foreach_add_List", "_foreach_add"},
        {"_foreach_add__Scalar", "_foreach_add_"},
        {"__and___Tensor", "__and__"},
        {"float_power_Tensor_Scalar", "float_power"},
        {"int_repr", "int_repr"},
        {"_dim_arange", "_dim_arange"},
        {"sparse_dim", "sparse_dim"},
        {"_cast_Float", "_cast_Float"},
        {"sym_size_int", "sym_size"},
        {"var_mean", "var_mean"},
        {"zeros_like", "zeros_like"},
        {"_", "_"},
        {"", ""},
    };
    for (const auto& [id, want] : names) EXPECT_EQ(opNameOfIdentifier(id), want) << id;
}

TEST(OpInference, OnlyTheDispatcherEntryOfAnOpIsAnOpFrame) {
    EXPECT_EQ(opOfFrameFunction("at::_ops::mm::call(at::Tensor const&, at::Tensor const&)"),
              std::optional<std::string>("aten::mm"));
    EXPECT_EQ(opOfFrameFunction("at::_ops::add_Tensor::redispatch(c10::DispatchKeySet, "
                                "at::Tensor const&, at::Tensor const&, c10::Scalar const&)"),
              std::optional<std::string>("aten::add"));
    EXPECT_EQ(opOfFrameFunction("at::_ops::_softmax::call"),
              std::optional<std::string>("aten::_softmax"));
    EXPECT_FALSE(opOfFrameFunction("at::_ops::mm::schema()"));
    EXPECT_FALSE(opOfFrameFunction("at::_ops::mm::callx()"));
    EXPECT_FALSE(opOfFrameFunction("at::_ops::::call()"));
    EXPECT_FALSE(opOfFrameFunction("at::_ops::"));
    EXPECT_FALSE(opOfFrameFunction(""));
    EXPECT_FALSE(opOfFrameFunction(
        "torch::autograd::VariableType::(anonymous namespace)::mm(c10::DispatchKeySet, "
        "at::Tensor const&, at::Tensor const&)"));
    // A c10 wrapper names the op only inside its template arguments.
    EXPECT_FALSE(opOfFrameFunction(
        "c10::impl::wrap_kernel_functor_unboxed_<c10::impl::detail::WrapFunctionIntoFunctor_<"
        "c10::CompileTimeFunctionPointer<at::Tensor (at::Tensor const&), &at::_ops::mm::call>"
        ">>::call(c10::OperatorKernel*)"));
    EXPECT_FALSE(opOfFrameFunction("forward"));
}

// A trace whose allocations carry C++ stacks (innermost first) as a
// snapshot recorded with stacks="all" has them.
struct CppTrace {
    Trace trace;
    FrameId frame(std::string_view function, std::string_view file = "??") {
        return trace.internFrame({trace.internString(function), trace.internString(file), 0});
    }
    void alloc(std::vector<FrameId> frames, int64_t time) {
        Event e;
        e.kind = EventKind::Alloc;
        e.time = time;
        e.address = 0x1000 * uint64_t(time + 1);
        e.size = 512;
        e.stack = trace.internStack(frames);
        trace.events.push_back(e);
    }
};

TEST(OpInference, InnermostOpThatIsNotAnAllocationHelper) {
    CppTrace t;
    const FrameId allocator = t.frame("c10::cuda::CUDACachingAllocator::Native::malloc()");
    const FrameId empty =
        t.frame("at::_ops::empty_memory_format::redispatch(c10::DispatchKeySet, ...)");
    const FrameId empty_call = t.frame("at::_ops::empty_memory_format::call(...)");
    const FrameId mm_redispatch = t.frame("at::_ops::mm::redispatch(c10::DispatchKeySet, ...)");
    const FrameId variable_type = t.frame("torch::autograd::VariableType::(anonymous)::mm(...)");
    const FrameId mm = t.frame("at::_ops::mm::call(at::Tensor const&, at::Tensor const&)");
    const FrameId matmul = t.frame("at::_ops::matmul::call(at::Tensor const&, at::Tensor const&)");
    const FrameId linear = t.frame("at::_ops::linear::call(...)");
    const FrameId python = t.frame("forward", "model.py");
    // mm's output: the empty inside it is looked through.
    t.alloc(
        {allocator, empty, empty_call, mm_redispatch, variable_type, mm, matmul, linear, python},
        0);
    // torch.empty() from Python: the helper is the op.
    t.alloc({allocator, empty, empty_call, python}, 1);
    // Python frames only: no op.
    t.alloc({python}, 2);
    t.alloc({}, 3);
    // The same stack again is read from the cache.
    t.alloc(
        {allocator, empty, empty_call, mm_redispatch, variable_type, mm, matmul, linear, python},
        4);
    Event free_event;
    free_event.kind = EventKind::FreeCompleted;
    free_event.time = 5;
    free_event.stack = t.trace.events[0].stack;
    t.trace.events.push_back(free_event);

    const OpInferenceReport report = inferOps(t.trace);
    EXPECT_EQ(report.source, OpSource::Inferred);
    EXPECT_EQ(report.allocations, 5u);
    EXPECT_EQ(report.allocations_with_op, 3u);
    const Trace& tr = t.trace;
    ASSERT_EQ(tr.ops.source, OpSource::Inferred);
    ASSERT_EQ(tr.ops.event_ops.size(), tr.events.size());
    EXPECT_TRUE(tr.ops.scopes.empty());
    EXPECT_EQ(tr.string(tr.ops.event_ops[0]), "aten::mm");
    EXPECT_EQ(tr.string(tr.ops.event_ops[1]), "aten::empty");
    EXPECT_TRUE(tr.ops.event_ops[2].isNull());
    EXPECT_TRUE(tr.ops.event_ops[3].isNull());
    EXPECT_EQ(tr.string(tr.ops.event_ops[4]), "aten::mm");
    EXPECT_TRUE(tr.ops.event_ops[5].isNull());  // a free makes no memory
    // What every view asks.
    const OpAttribution ops(tr);
    EXPECT_EQ(ops.source(), OpSource::Inferred);
    ASSERT_TRUE(ops.ofEvent(0, 0));
    EXPECT_EQ(tr.string(ops.ofEvent(0, 0)->name), "aten::mm");
}

TEST(OpInference, RecordedOpsAndTracesWithoutOpFramesAreLeftAlone) {
    {
        CppTrace t;
        t.trace.ops.source = OpSource::Recorded;
        t.trace.ops.scopes = {OpScope{0, 10, t.trace.internString("aten::addmm"), 0}};
        t.alloc({t.frame("at::_ops::mm::call(...)")}, 1);
        const OpInferenceReport report = inferOps(t.trace);
        EXPECT_EQ(report.source, OpSource::Recorded);
        EXPECT_TRUE(t.trace.ops.event_ops.empty());
        EXPECT_EQ(t.trace.ops.scopes.size(), 1u);
    }
    {
        CppTrace t;
        t.alloc({t.frame("forward", "model.py")}, 1);
        const OpInferenceReport report = inferOps(t.trace);
        EXPECT_EQ(report.source, OpSource::None);
        EXPECT_TRUE(t.trace.ops.empty());
        EXPECT_EQ(t.trace.ops.source, OpSource::None);
    }
    {
        // An op frame only on a free (the alloc before the trace): nothing
        // inferred, no empty column of ops.
        CppTrace t;
        Event e;
        e.kind = EventKind::FreeCompleted;
        e.stack = t.trace.internStack(std::vector<FrameId>{t.frame("at::_ops::mm::call()")});
        t.trace.events.push_back(e);
        EXPECT_EQ(inferOps(t.trace).source, OpSource::None);
        EXPECT_TRUE(t.trace.ops.empty());
    }
    {
        CppTrace t;
        t.alloc({t.frame("at::_ops::mm::call()")}, 1);
        TaskContext ctx;
        std::atomic<bool> cancel{true};
        ctx.cancel = &cancel;
        EXPECT_EQ(inferOps(t.trace, ctx).source, OpSource::None);
        EXPECT_TRUE(t.trace.ops.empty());
    }
}

TEST(OpInference, RunsWithTheOtherInferenceWhenATraceOpens) {
    CppTrace t;
    t.alloc({t.frame("at::_ops::_softmax::call(at::Tensor const&, long, bool)")}, 1);
    const InferenceReport report = inferMissingLabels(t.trace);
    EXPECT_EQ(report.ops.source, OpSource::Inferred);
    EXPECT_EQ(report.ops.allocations_with_op, 1u);
    EXPECT_EQ(t.trace.string(t.trace.ops.event_ops.at(0)), "aten::_softmax");
}

}  // namespace
}  // namespace memscope
