#include "signal_relay.h"

#include <algorithm>

namespace memscope::cli {

bool SignalRelay::take(std::deque<Timed>& from, int sig) {
    auto it =
        std::find_if(from.begin(), from.end(), [sig](const Timed& t) { return t.sig == sig; });
    if (it == from.end()) return false;
    from.erase(it);
    return true;
}

void SignalRelay::expire(Clock::time_point now) {
    std::erase_if(expected_, [now](const Timed& t) { return t.at <= now; });
    std::erase_if(unclaimed_, [now](const Timed& t) { return now - t.at > kEarlyAck; });
}

void SignalRelay::received(int sig, bool from_terminal, Clock::time_point now) {
    expire(now);
    // The command's byte came first: it has this signal already.
    if (take(unclaimed_, sig)) return;
    if (from_terminal) {
        // The terminal signals the whole foreground group: never passed on,
        // but its byte must not be taken for a later signal's.
        expected_.push_back({sig, now + kExpectedAck});
        return;
    }
    waiting_.push_back({sig, now + kAckWait});
}

void SignalRelay::acknowledged(int sig, Clock::time_point now) {
    expire(now);
    // A signal still waiting first: the byte says the command got one since.
    if (take(waiting_, sig)) return;
    if (take(expected_, sig)) return;
    unclaimed_.push_back({sig, now});
}

std::vector<int> SignalRelay::due(Clock::time_point now) {
    expire(now);
    std::vector<int> out;
    while (!waiting_.empty() && waiting_.front().at <= now) {
        out.push_back(waiting_.front().sig);
        expected_.push_back({waiting_.front().sig, now + kExpectedAck});
        waiting_.pop_front();
    }
    return out;
}

std::optional<SignalRelay::Clock::time_point> SignalRelay::nextDeadline() const {
    // Every wait is kAckWait long, so the oldest ends first.
    if (waiting_.empty()) return std::nullopt;
    return waiting_.front().at;
}

}  // namespace memscope::cli
