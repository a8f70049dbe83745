#pragma once
// The EventSink the tracer decodes into: the background trace writer, with
// phases looked up by time and stacks joined by correlation id.

#include "event_sink.h"
#include "memscope/format/native_format.h"
#include "phase_index.h"
#include "stack_store.h"

namespace memscope::cupti {

class WriterSink final : public EventSink {
public:
    WriterSink(BackgroundTraceWriter& writer, PhaseIndex& phases, StackStore* stacks)
        : writer_(writer), phases_(phases), stacks_(stacks) {}

    uint32_t stream(uint64_t raw_stream) override { return writer_.internStream(raw_stream); }
    StackId stackFor(uint32_t correlation_id) override {
        return stacks_ ? stacks_->take(correlation_id, writer_) : StackId{};
    }
    PhaseId phaseAt(int64_t time) override { return phases_.innermostAt(time); }
    uint64_t append(const Event& event) override { return writer_.append(event); }
    void attribute(uint64_t event, std::string_view key, std::string_view value) override {
        writer_.addAttribute(event, writer_.internString(key), writer_.internString(value));
    }

private:
    BackgroundTraceWriter& writer_;
    PhaseIndex& phases_;
    StackStore* stacks_;
};

}  // namespace memscope::cupti
