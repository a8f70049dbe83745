#include "timeline_reader.h"

#include <rapidjson/reader.h>

#include <algorithm>

namespace memscope::memory_timeline {
namespace {

constexpr size_t kMaxRowValues = 64;
// 8M samples: far more than torch.profiler writes (one per memory change it
// kept), and 64 MB while read.
constexpr size_t kMaxTimes = 8u << 20;  // a row of sizes has 9 values; more is not this format

class Handler : public rapidjson::BaseReaderHandler<rapidjson::UTF8<>, Handler> {
public:
    Handler(TimelineRows& out, json_input::Source& src, const TaskContext& ctx)
        : out_(out), gate_(ctx, src) {}

    bool StartObject() { return fail("an object where the memory timeline has only lists"); }
    bool StartArray() {
        if (stream_) stream_->mark();
        ++depth_;
        if (depth_ > 3) return fail("lists nested deeper than a memory timeline's");
        if (depth_ == 2) {
            row_.clear();
            ++top_items_;
        } else if (depth_ == 3) {
            out_.coalesced = true;
            row_.clear();
        }
        return true;
    }
    bool EndArray(rapidjson::SizeType) {
        if (stream_) stream_->mark();
        if (depth_ == 3) {
            out_.sizes.push_back(row_);
        } else if (depth_ == 2) {
            if (top_items_ == 1)
                first_ = row_;  // the times, if this is the coalesced shape
            else if (!out_.coalesced && row_.empty() && top_items_ == 2)
                out_.coalesced = true;  // [[], []]
            else if (!out_.coalesced)
                addRaw();
            if (top_items_ == 1 && !out_.coalesced && row_.size() == 4) first_is_row_ = true;
        }
        --depth_;
        return progress();
    }
    bool RawNumber(const char* s, rapidjson::SizeType n, bool) {
        if (stream_) stream_->mark();
        if (depth_ < 2) return fail("a number outside the timeline's lists");
        int64_t v;
        if (!json_input::parseInt(s, n, v))
            return fail("a number out of range: " + std::string(s, n));
        if (depth_ == 2 && top_items_ == 1) {
            // Times can be long, but not longer than any real timeline's.
            if (row_.size() >= kMaxTimes)
                return fail("more than " + std::to_string(kMaxTimes) + " times");
            row_.push_back(v);
            return true;
        }
        if (row_.size() >= kMaxRowValues) return fail("a row longer than a memory timeline's");
        row_.push_back(v);
        return true;
    }
    bool String(const char*, rapidjson::SizeType, bool) {
        return fail("a string where numbers belong");
    }
    bool Null() { return fail("null where numbers belong"); }
    bool Bool(bool) { return fail("a boolean where numbers belong"); }
    bool Key(const char*, rapidjson::SizeType, bool) { return true; }

    bool finish() {
        if (!out_.coalesced && !first_.empty() && !first_is_row_)
            return fail("a raw event with " + std::to_string(first_.size()) +
                        " values instead of 4");
        if (out_.coalesced) {
            out_.times = std::move(first_);
        } else if (first_is_row_) {
            row_ = first_;
            addRaw();
            // first_ came before the others: rotate it to the front.
            std::rotate(out_.raw.begin(), out_.raw.end() - 1, out_.raw.end());
        }
        return true;
    }
    const std::string& error() const { return error_; }
    bool cancelled() const { return gate_.cancelled(); }
    void setStream(json_input::Stream* stream) { stream_ = stream; }

private:
    bool fail(std::string m) {
        if (error_.empty()) error_ = "not a torch.profiler memory timeline: " + std::move(m);
        return false;
    }
    void addRaw() {
        if (row_.size() != 4) {
            fail("a raw event with " + std::to_string(row_.size()) + " values instead of 4");
            bad_ = true;
            return;
        }
        out_.raw.push_back({row_[0], row_[1], row_[2], row_[3]});
    }
    bool progress() {
        if (bad_) return false;
        return gate_.tick();
    }

    TimelineRows& out_;
    json_input::Stream* stream_ = nullptr;
    json_input::ProgressGate gate_;
    int depth_ = 0;
    uint64_t top_items_ = 0;
    std::vector<int64_t> row_, first_;
    bool first_is_row_ = false, bad_ = false;
    std::string error_;
};

}  // namespace

Result<TimelineRows> readRows(json_input::Source& src, const TaskContext& ctx) {
    TimelineRows rows;
    Handler handler(rows, src, ctx);
    json_input::Stream stream(src, &ctx);
    handler.setStream(&stream);
    rapidjson::Reader reader;
    constexpr unsigned kFlags =
        rapidjson::kParseIterativeFlag | rapidjson::kParseNumbersAsStringsFlag;
    const rapidjson::ParseResult ok = reader.Parse<kFlags>(stream, handler);
    if (handler.cancelled() || stream.cancelled()) return cancelledError();
    if (!stream.error().empty()) return makeError(stream.error());
    if (!src.error().empty()) return makeError(src.error());
    if (!handler.error().empty()) return makeError(handler.error());
    if (!ok)
        return makeError("not valid JSON at byte " + std::to_string(ok.Offset()) + " (error " +
                         std::to_string(int(ok.Code())) + ")");
    if (!handler.finish()) return makeError(handler.error());
    if (rows.coalesced && rows.times.size() != rows.sizes.size())
        return makeError(
            "not a torch.profiler memory timeline: " + std::to_string(rows.times.size()) +
            " times but " + std::to_string(rows.sizes.size()) + " size rows");
    return rows;
}

}  // namespace memscope::memory_timeline
