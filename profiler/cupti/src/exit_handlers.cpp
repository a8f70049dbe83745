#include "exit_handlers.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <thread>

#include "tracer.h"

namespace memscope::cupti {
namespace {

// How long a fatal signal waits for the trace to be closed before the process
// dies as it would have without us.
constexpr int kFatalSignalWaitMs = 2000;

constexpr int kSignals[] = {SIGINT, SIGTERM};
struct sigaction g_previous[NSIG];
std::atomic<Tracer*> g_tracer{nullptr};

// The signal handler cannot take locks, so it hands the work to this thread
// through a pipe: 'f' = flush, 's' = shut down; the thread answers on `done`.
int g_request_pipe[2] = {-1, -1};
int g_done_pipe[2] = {-1, -1};

void serviceLoop() {
    // Signals go to the application's threads, never here (a handler running
    // on this thread would wait for itself).
    sigset_t mask;
    sigemptyset(&mask);
    for (int s : kSignals) sigaddset(&mask, s);
    pthread_sigmask(SIG_BLOCK, &mask, nullptr);
    for (;;) {
        char request = 0;
        const ssize_t n = read(g_request_pipe[0], &request, 1);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;
        Tracer* tracer = g_tracer.load();
        if (!tracer || tracer->disabled()) continue;
        if (request == 's') {
            tracer->shutdown();
            const char done = 1;
            [[maybe_unused]] ssize_t ignored = write(g_done_pipe[1], &done, 1);
        } else {
            tracer->flush();
        }
    }
}

bool isDefault(const struct sigaction& a) {
    return !(a.sa_flags & SA_SIGINFO) && a.sa_handler == SIG_DFL;
}

void onSignal(int sig, siginfo_t* info, void* context) {
    const int saved_errno = errno;
    const struct sigaction& previous = g_previous[sig];
    Tracer* tracer = g_tracer.load();
    if (tracer && !tracer->disabled() && g_request_pipe[1] >= 0) {
        if (isDefault(previous)) {
            // The process is about to die: close the trace first, but never
            // wait for long (the thread holding a lock may be this one).
            const char request = 's';
            if (write(g_request_pipe[1], &request, 1) == 1) {
                pollfd done{g_done_pipe[0], POLLIN, 0};
                poll(&done, 1, kFatalSignalWaitMs);
            }
        } else {
            // Someone else handles it (Python's KeyboardInterrupt): just make
            // sure what we have is on disk; exit will close the file.
            const char request = 'f';
            [[maybe_unused]] ssize_t ignored = write(g_request_pipe[1], &request, 1);
        }
    }
    errno = saved_errno;

    if (previous.sa_flags & SA_SIGINFO) {
        if (previous.sa_sigaction) previous.sa_sigaction(sig, info, context);
    } else if (previous.sa_handler == SIG_DFL) {
        // Die of the same signal, with the same exit status as without us.
        sigaction(sig, &previous, nullptr);
        sigset_t unblock;
        sigemptyset(&unblock);
        sigaddset(&unblock, sig);
        pthread_sigmask(SIG_UNBLOCK, &unblock, nullptr);
        raise(sig);
    } else if (previous.sa_handler != SIG_IGN) {
        previous.sa_handler(sig);
    }
}

std::atomic<bool> g_cuda_exit_handler{false};  // installCudaExitHandler ran
std::atomic<bool> g_early_exit_handler{false};

void atExit() {
    if (Tracer* tracer = g_tracer.load()) tracer->shutdown();
}

// Registered before CUDA started: runs after CUDA's teardown when CUDA started
// later, by which time the handler registered at cuInit has closed the trace.
void atExitWithoutCuda() {
    if (g_cuda_exit_handler.load()) return;
    atExit();
}

void inForkedChild() {
    if (Tracer* tracer = g_tracer.load()) tracer->disableAfterFork();
    // The service thread is the parent's; the child only needs the handlers
    // to chain, which they do while the tracer is disabled.
}

bool makePipe(int fds[2]) {
    if (pipe2(fds, O_CLOEXEC) != 0) return false;
    fcntl(fds[1], F_SETFL, fcntl(fds[1], F_GETFL) | O_NONBLOCK);
    return true;
}

void installSignalHandlers() {
    if (!makePipe(g_request_pipe) || !makePipe(g_done_pipe)) return;
    try {
        std::thread(serviceLoop).detach();
    } catch (...) {
        return;  // no thread, no signal flush; the periodic flush still runs
    }
    for (int sig : kSignals) {
        struct sigaction current {};
        if (sigaction(sig, nullptr, &current) != 0) continue;
        // An ignored signal stays ignored (nohup, background jobs).
        if (!(current.sa_flags & SA_SIGINFO) && current.sa_handler == SIG_IGN) continue;
        g_previous[sig] = current;
        struct sigaction ours {};
        ours.sa_sigaction = onSignal;
        ours.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
        sigemptyset(&ours.sa_mask);
        sigaction(sig, &ours, nullptr);
    }
}

}  // namespace

void installForkHandler(Tracer& tracer) {
    static std::atomic<bool> installed{false};
    if (installed.exchange(true)) return;
    g_tracer.store(&tracer);
    pthread_atfork(nullptr, nullptr, inForkedChild);
}

void installExitHandlers(Tracer& tracer) {
    static std::atomic<bool> installed{false};
    if (installed.exchange(true)) return;
    g_tracer.store(&tracer);
    if (!g_cuda_exit_handler.load() && !g_early_exit_handler.exchange(true))
        std::atexit(atExitWithoutCuda);
    installSignalHandlers();
}

void installCudaExitHandler(Tracer& tracer) {
    g_tracer.store(&tracer);
    if (!g_cuda_exit_handler.exchange(true)) std::atexit(atExit);
}

}  // namespace memscope::cupti
