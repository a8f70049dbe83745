#include "memscope/base/stage_times.h"

#include <cstdio>

namespace memscope {

void StageTimes::add(std::string_view stage, Clock::time_point start, Clock::time_point end) {
    const double seconds = std::chrono::duration<double>(end - start).count();
    std::lock_guard lock(mutex_);
    if (!any_ || start < first_) first_ = start;
    if (!any_ || end > last_) last_ = end;
    any_ = true;
    for (auto& [name, total] : stages_)
        if (name == stage) {
            total += seconds;
            return;
        }
    stages_.emplace_back(std::string(stage), seconds);
}

std::vector<std::pair<std::string, double>> StageTimes::stages() const {
    std::lock_guard lock(mutex_);
    return stages_;
}

double StageTimes::wallSeconds() const {
    std::lock_guard lock(mutex_);
    return any_ ? std::chrono::duration<double>(last_ - first_).count() : 0.0;
}

std::string StageTimes::text() const {
    std::string out;
    char buf[64];
    for (const auto& [name, seconds] : stages()) {
        std::snprintf(buf, sizeof buf, " %.3f s", seconds);
        if (!out.empty()) out += ", ";
        out += name + buf;
    }
    std::snprintf(buf, sizeof buf, "wall %.3f s", wallSeconds());
    return out.empty() ? std::string(buf) : out + "; " + buf;
}

}  // namespace memscope
