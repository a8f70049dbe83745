#pragma once
// Runs the program with glibc's malloc backing its large blocks with
// transparent huge pages (2 MiB), by executing it once more, at the start of
// main, with GLIBC_TUNABLES=glibc.malloc.hugetlb=1 added: glibc reads its
// tunables only when a process starts.
//
// Why: opening a 1 GB snapshot allocates and frees about a gigabyte of
// short-lived arrays (the unpickler's values, the events, the window keys of
// step inference, the timeline's series). In 4 KiB pages that is some 200,000
// page faults, and on a virtual machine each costs microseconds: on this
// project's 2-core VM, `memscope-cli summary` of a 1 GB snapshot with many
// short-lived allocations took 2.57-3.28 s that way and 1.57-2.50 s in huge
// pages (20,000 faults), at the same peak memory (docs/PERFORMANCE.md, "Huge pages").
//
// The relaunched process puts GLIBC_TUNABLES back as the user had it, so the
// programs it starts (record's training job) inherit the user's environment,
// not memscope's malloc settings.
//
// Nothing happens, and the program goes on as it was started, when:
//   - MEMSCOPE_HUGE_PAGES=0 is set (the way to turn it off);
//   - GLIBC_TUNABLES already says glibc.malloc.hugetlb (the user's choice);
//   - transparent huge pages are not in "madvise" mode: under "always" the
//     kernel already backs large blocks with them, under "never" it cannot;
//   - glibc is older than 2.35 (no such tunable), the build has a sanitizer
//     or the program runs under valgrind (their allocators are not glibc's),
//     the dynamic loader was started by name with the program as its
//     argument, or this is not Linux;
//   - the exec fails.

namespace memscope {

// Call first in main, before any thread starts and before anything that the
// exec would lose (output, files opened). Returns only when there is nothing
// to do or the exec failed; `argv` as main got it.
void useHugePageMalloc(char** argv);

// What this process runs with.
enum class HugePageMalloc {
    Relaunched,     // useHugePageMalloc executed the program again with the tunable
    NotRelaunched,  // it did not (one of the reasons above), or was not called
};
HugePageMalloc hugePageMalloc();

}  // namespace memscope
