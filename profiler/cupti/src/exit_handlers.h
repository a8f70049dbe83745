#pragma once
// The end of recording: at exit, on SIGTERM/SIGINT (chaining whatever handler
// was there), and the fork rule (a child stops recording without touching the
// parent's threads or locks).

namespace memscope::cupti {

class Tracer;

// When the tracer is created, before anything can be recording: a forked
// child is disabled whatever it inherits (a lock held by a thread that does
// not exist in the child, a writer whose thread is gone).
void installForkHandler(Tracer& tracer);

// Once per process, when the trace file is created: the signal handlers, and
// an exit handler only if CUDA has not started yet (a process that uses NVTX
// alone must still close its trace). That one is registered before CUDA's own
// teardown and so would run after it: when CUDA starts later, it stands down.
void installExitHandlers(Tracer& tracer);

// From InitializeInjection, while cuInit runs: the exit handler that closes
// the trace. Registered after CUDA began, it runs before CUDA's teardown
// (atexit handlers run in reverse), so the final CUPTI flush still has CUDA
// to flush from. NVIDIA's injection samples register theirs here too.
void installCudaExitHandler(Tracer& tracer);

}  // namespace memscope::cupti
