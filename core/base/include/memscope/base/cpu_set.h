#pragma once
// Which CPUs a thread may run on (Linux scheduler affinity), for placing a
// recorder's background threads.
//
// Why a recorder places its threads at all: on a machine whose cores the
// traced program keeps busy, the recorder's threads take their CPU time from
// it. Where they take it matters more than how much. Measured with the
// trainer on 2 cores (gpt quick preset, OpenBLAS with 2 threads): OpenBLAS's
// second thread waits for work by spinning on sched_yield, so it holds the
// other core and gives it up to any thread that asks. The recording's threads
// then ran for a whole batch (hundreds of microseconds) while a matrix
// product waited for that worker, or preempted the training thread on its own
// core. Kept off the training thread's core, and giving the core back every
// few microseconds (sched_yield between small pieces of work), the recording
// cost +1.2% to +1.9% of step time instead of +2.2% to +3.5% (profiler/
// trainer/README.md, "Recording cost").

#include <pthread.h>

#include <optional>
#include <string>
#include <vector>

namespace memscope {

class CpuSet {
public:
    CpuSet() = default;
    explicit CpuSet(std::vector<int> cpus);  // sorted, duplicates and negatives dropped

    // The calling thread's affinity: empty when the system does not say.
    static CpuSet ofCallingThread();
    // The affinity of `thread`: empty when the system does not say.
    static CpuSet ofThread(pthread_t thread);

    CpuSet without(int cpu) const;
    bool contains(int cpu) const;
    bool empty() const { return cpus_.empty(); }
    size_t size() const { return cpus_.size(); }
    const std::vector<int>& cpus() const { return cpus_; }
    // As the kernel lists them (/proc/<pid>/status, Cpus_allowed_list): "0-3,6".
    std::string toString() const;

    // Restricts `thread` to these CPUs. False, and nothing changed, when the
    // set is empty or the system refuses (a CPU outside the process's cgroup).
    bool applyTo(pthread_t thread) const;

    friend bool operator==(const CpuSet&, const CpuSet&) = default;

private:
    std::vector<int> cpus_;
};

// Where the calling thread's helpers should run: the CPUs it may use, less
// the one it runs on now. None when that leaves no CPU (a single-CPU
// affinity) or the system does not say.
std::optional<CpuSet> cpusBesideCallingThread();

}  // namespace memscope
