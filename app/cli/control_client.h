#pragma once
// The client side of the hook's control sockets (docs/HOOK_FORMAT.md, "Control
// socket"): finding the processes of a job started with `record --idle` (or
// made attachable with memscope.attachable()), and one request to one of them.
//
// Sockets are <folder>/<pid>.sock, where <folder> is $XDG_RUNTIME_DIR/memscope
// or <output folder>/.memscope-control; only folders and sockets of this user
// that no one else may enter are used, and the hook at the other end must run
// as this user too (SO_PEERCRED). A socket whose process is gone, or that
// nobody answers on, is stale: it is removed.

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "memscope/base/result.h"

namespace memscope::cli {

// What a process's status reply says (the fields attach and top use).
struct ControlStatus {
    pid_t pid = -1;
    int rank = -1;
    int local_rank = -1;
    std::string output_dir;
    std::optional<int64_t> step;  // the open step, if one is open
    int64_t steps_done = 0;       // steps that ended (the last: steps_done - 1)
    std::string phase;            // the innermost open phase, "" if none
    std::string window;           // the window armed or open, "" if none
    std::string window_state;     // "armed" | "on"
    std::optional<int64_t> window_first_step, window_last_step;  // a steps window, once on
    std::vector<std::string> done;                               // windows that ended, oldest first
    std::optional<int64_t> cuda_live, cuda_reserved, cpu_live, cpu_tensors;
    // What the models and optimizers the hook saw hold (parameter, gradient,
    // optimizer_state), and the largest top-level modules by those bytes.
    std::vector<std::pair<std::string, int64_t>> categories, modules;
    std::string argv;  // the script, as the process sees sys.argv (joined)
    int64_t time_ns = 0;
};

struct JobProcess {
    pid_t pid = -1;
    std::filesystem::path socket;
    ControlStatus status;
};

// The folders sockets may be in, for a job writing to `output_dir` ("" when
// unknown): $XDG_RUNTIME_DIR/memscope, then output_dir/.memscope-control.
std::vector<std::filesystem::path> socketFolders(const std::filesystem::path& output_dir);

// One request line (without its newline) to `socket`; the reply line. The
// peer must run as this user. Errors name the socket.
Result<std::string> controlRequest(const std::filesystem::path& socket, const std::string& line,
                                   int timeout_ms = 5000);

// The reply parsed: an error when it is not {"ok": true, ...} (the hook's
// error text when it gave one).
Result<ControlStatus> parseStatus(const std::string& reply);
Result<void> replyOk(const std::string& reply);

// The attachable processes of a job: TARGET is its output folder or the pid
// of one of its processes (then all processes writing to the same folder).
// The error says what was found instead and how to start a job so that it
// can be attached to.
// categories: ask each process for what its models hold (it answers at its
// next step's end, waiting up to a second): for top.
Result<std::vector<JobProcess>> findJob(const std::string& target, bool categories = false);

// Whether process `pid` still exists.
bool processAlive(pid_t pid);

}  // namespace memscope::cli
