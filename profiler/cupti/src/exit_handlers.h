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

// Once per process, when the trace file is created: at exit and on signals.
void installExitHandlers(Tracer& tracer);

}  // namespace memscope::cupti
