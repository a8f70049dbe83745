#include "memscope/base/stage_times.h"

#include <cstdio>

namespace memscope {

void StageTimes::add(std::string_view stage, double seconds) {
    std::lock_guard lock(mutex_);
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

std::string StageTimes::text() const {
    std::string out;
    double total = 0;
    char buf[64];
    for (const auto& [name, seconds] : stages()) {
        std::snprintf(buf, sizeof buf, " %.3f s", seconds);
        if (!out.empty()) out += ", ";
        out += name + buf;
        total += seconds;
    }
    std::snprintf(buf, sizeof buf, "total %.3f s", total);
    return out.empty() ? std::string(buf) : out + "; " + buf;
}

}  // namespace memscope
