#include "clock.h"

#include <fstream>
#include <string>

namespace memscope::trainer {
namespace {

// The kernel keeps time with the TSC only when it found it invariant and the
// same on every core; then so can we. Anything else (another clocksource,
// no sysfs, not x86) takes the steady clock.
bool kernelKeepsTimeWithTsc() {
#if defined(__x86_64__)
    std::ifstream in("/sys/devices/system/clocksource/clocksource0/current_clocksource");
    std::string source;
    return in >> source && source == "tsc";
#else
    return false;
#endif
}

}  // namespace

const bool TickClock::counts_cycles_ = kernelKeepsTimeWithTsc();

}  // namespace memscope::trainer
