#pragma once
// Reads back the structure of a snapshot pickle that the exporter wrote, with
// the plugin's own safe unpickler and no mapping into a Trace: how many
// 'device_traces' lists (and entries in each) and the 'external_annotations'.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "memscope/base/result.h"
#include "pickle_machine.h"
#include "test_util.h"

namespace memscope::test {

struct AnnotationRow {
    std::string stage;
    std::string name;
    int64_t device = 0;
    int64_t time_us = 0;
};

struct SnapshotShape {
    bool has_device_traces = false;
    std::vector<size_t> device_traces;  // entries per list
    bool has_annotations = false;
    std::vector<AnnotationRow> annotations;
};

namespace detail {
class KeepAll final : public pickle::Handler {
public:
    bool onAppend(pickle::Machine&, uint32_t, pickle::Value&, bool&) override { return true; }
    void onBatchEnd(pickle::Machine&) override {}
};
}  // namespace detail

inline Result<SnapshotShape> readShape(const std::filesystem::path& path) {
    using pickle::Kind;
    using pickle::Tag;
    const std::vector<std::byte> bytes = readBytes(path);
    detail::KeepAll keep;
    pickle::Machine m(bytes, keep);
    auto root = m.run(TaskContext{});
    if (!root) return root.error();
    pickle::Container* top = m.deref(*root);
    if (!top || top->kind != Kind::Dict) return makeError("the top level is not a dict");
    SnapshotShape shape;
    for (size_t i = 0; i + 1 < top->items.size(); i += 2) {
        if (top->items[i].tag != Tag::Str) continue;
        const std::string_view key = m.str(top->items[i]);
        pickle::Container* v = m.deref(top->items[i + 1]);
        if (key == "device_traces") {
            if (!v || v->kind != Kind::List) return makeError("device_traces is not a list");
            shape.has_device_traces = true;
            for (const pickle::Value& d : v->items) {
                pickle::Container* l = m.deref(d);
                if (!l || l->kind != Kind::List) return makeError("a device trace is not a list");
                shape.device_traces.push_back(l->items.size());
            }
        } else if (key == "external_annotations") {
            if (!v || v->kind != Kind::List) return makeError("external_annotations is not a list");
            shape.has_annotations = true;
            for (const pickle::Value& a : v->items) {
                pickle::Container* d = m.deref(a);
                if (!d || d->kind != Kind::Dict) return makeError("an annotation is not a dict");
                AnnotationRow row;
                for (size_t j = 0; j + 1 < d->items.size(); j += 2) {
                    const std::string_view k = m.str(d->items[j]);
                    const pickle::Value& x = d->items[j + 1];
                    if (k == "stage" && x.tag == Tag::Str)
                        row.stage = m.str(x);
                    else if (k == "name" && x.tag == Tag::Str)
                        row.name = m.str(x);
                    else if (k == "device" && x.isInt())
                        row.device = x.asI64();
                    else if (k == "time_us" && x.isInt())
                        row.time_us = x.asI64();
                }
                shape.annotations.push_back(std::move(row));
            }
        }
    }
    return shape;
}

}  // namespace memscope::test
