#pragma once
// Wall time per stage of a long task (opening a file: import, inference,
// timeline; then what a command computes from it), so that a user or a
// benchmark can see where the time goes (`memscope-cli summary --timings`).
// A stage that runs more than once (one file of a folder after another) adds
// up under its name, in the order it first ran.

#include <chrono>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace memscope {

class StageTimes {
public:
    using Clock = std::chrono::steady_clock;
    void add(std::string_view stage, Clock::time_point start, Clock::time_point end);
    // (stage, seconds), in the order each stage first ran.
    std::vector<std::pair<std::string, double>> stages() const;
    // From the first stage's start to the last one's end: stages that ran
    // side by side (on two threads) count once.
    double wallSeconds() const;
    // "import 1.13 s, inference 0.21 s, ...; wall 2.01 s".
    std::string text() const;

private:
    mutable std::mutex mutex_;
    std::vector<std::pair<std::string, double>> stages_;
    Clock::time_point first_{}, last_{};
    bool any_ = false;
};

// Adds the time from its construction to its destruction to `times` (none
// when null, so that callers need not ask whether anyone is timing).
class StageClock {
public:
    StageClock(StageTimes* times, std::string_view stage)
        : times_(times), stage_(stage), start_(std::chrono::steady_clock::now()) {}
    ~StageClock() {
        if (times_) times_->add(stage_, start_, std::chrono::steady_clock::now());
    }
    StageClock(const StageClock&) = delete;
    StageClock& operator=(const StageClock&) = delete;

private:
    StageTimes* times_;
    std::string_view stage_;
    std::chrono::steady_clock::time_point start_;
};

}  // namespace memscope
