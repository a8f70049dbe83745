#include "memscope/report/stacks_report.h"

#include "memscope/base/text_escape.h"
#include "memscope/base/units.h"
#include "text_out.h"

namespace memscope {
namespace {

std::string foldedFrame(const std::string& frame) {
    std::string out = frame;
    for (char& c : out) {
        if (c == ';') c = ',';
        if (c == '\n' || c == '\r') c = ' ';
    }
    return out;
}

}  // namespace

std::string toFolded(const LiveStacks& stacks) {
    std::string out;
    for (const LiveStack& s : stacks.stacks) {
        for (size_t i = 0; i < s.frames.size(); ++i) {
            if (i) out += ';';
            out += foldedFrame(s.frames[i]);
        }
        appendf(out, " %lld\n", (long long)s.bytes);
    }
    return out;
}

std::string liveStacksText(const Trace& trace, const LiveStacks& stacks, size_t top) {
    std::string out;
    appendf(out, "device %d ", stacks.device);
    if (stacks.at_peak) out += "at the peak";
    if (trace.metadata.time_base == TimeBase::EventIndex)
        appendf(out, "%sat event time %lld", stacks.at_peak ? ", " : "", (long long)stacks.time);
    appendf(out, ": %s live in %zu stack%s\n", formatBytes(stacks.live_bytes).c_str(),
            stacks.stacks.size(), stacks.stacks.size() == 1 ? "" : "s");
    for (size_t i = 0; i < stacks.stacks.size() && i < top; ++i) {
        const LiveStack& s = stacks.stacks[i];
        appendf(out, "  %10s %6u x  %s\n", formatBytes(s.bytes).c_str(), s.count,
                terminalText(s.frames.back()).c_str());
        for (size_t k = s.frames.size() - 1; k-- > 0;)
            appendf(out, "                       %s\n", terminalText(s.frames[k]).c_str());
    }
    if (stacks.stacks.size() > top)
        appendf(out, "  (%zu more stacks; --folded prints them all)\n", stacks.stacks.size() - top);
    return out;
}

}  // namespace memscope
