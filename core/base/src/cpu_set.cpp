#include "memscope/base/cpu_set.h"

#include <sched.h>

#include <algorithm>

namespace memscope {
namespace {

CpuSet fromMask(const cpu_set_t& mask) {
    std::vector<int> cpus;
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
        if (CPU_ISSET(cpu, &mask)) cpus.push_back(cpu);
    return CpuSet(std::move(cpus));
}

}  // namespace

CpuSet::CpuSet(std::vector<int> cpus) : cpus_(std::move(cpus)) {
    std::erase_if(cpus_, [](int cpu) { return cpu < 0; });
    std::sort(cpus_.begin(), cpus_.end());
    cpus_.erase(std::unique(cpus_.begin(), cpus_.end()), cpus_.end());
}

CpuSet CpuSet::ofCallingThread() {
    return ofThread(pthread_self());
}

CpuSet CpuSet::ofThread(pthread_t thread) {
    cpu_set_t mask;
    CPU_ZERO(&mask);
    if (pthread_getaffinity_np(thread, sizeof mask, &mask) != 0) return {};
    return fromMask(mask);
}

CpuSet CpuSet::without(int cpu) const {
    CpuSet out = *this;
    std::erase(out.cpus_, cpu);
    return out;
}

bool CpuSet::contains(int cpu) const {
    return std::binary_search(cpus_.begin(), cpus_.end(), cpu);
}

std::string CpuSet::toString() const {
    std::string out;
    for (size_t i = 0; i < cpus_.size();) {
        size_t j = i;
        while (j + 1 < cpus_.size() && cpus_[j + 1] == cpus_[j] + 1) ++j;
        if (!out.empty()) out += ',';
        out += std::to_string(cpus_[i]);
        if (j > i) out += '-' + std::to_string(cpus_[j]);
        i = j + 1;
    }
    return out;
}

bool CpuSet::applyTo(pthread_t thread) const {
    if (cpus_.empty()) return false;
    cpu_set_t mask;
    CPU_ZERO(&mask);
    for (int cpu : cpus_) {
        if (cpu >= CPU_SETSIZE) return false;
        CPU_SET(cpu, &mask);
    }
    return pthread_setaffinity_np(thread, sizeof mask, &mask) == 0;
}

std::optional<CpuSet> cpusBesideCallingThread() {
    const int current = sched_getcpu();
    if (current < 0) return std::nullopt;
    CpuSet allowed = CpuSet::ofCallingThread();
    // A thread runs only where it is allowed; if the set says otherwise it
    // changed in between, and the answer would be a guess.
    if (!allowed.contains(current)) return std::nullopt;
    CpuSet others = allowed.without(current);
    if (others.empty()) return std::nullopt;
    return others;
}

}  // namespace memscope
