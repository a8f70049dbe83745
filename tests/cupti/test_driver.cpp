// Calls NVTX (and forks, hangs or loads the tracer the way the CUDA driver
// does) so that the injection tests can check what lands in the trace.
// Usage: memscope_cupti_test_driver phases|hang|fork|names N|driver LIBRARY|exit-order LIBRARY
#include <dlfcn.h>
#include <nvtx3/nvToolsExt.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

nvtxEventAttributes_t asciiMessage(const char* text) {
    nvtxEventAttributes_t attributes{};
    attributes.version = NVTX_VERSION;
    attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    attributes.messageType = NVTX_MESSAGE_TYPE_ASCII;
    attributes.message.ascii = text;
    return attributes;
}

long rssKb() {
    FILE* status = std::fopen("/proc/self/status", "r");
    if (!status) return -1;
    char line[256];
    long kb = -1;
    while (std::fgets(line, sizeof(line), status))
        if (std::sscanf(line, "VmRSS: %ld kB", &kb) == 1) break;
    std::fclose(status);
    return kb;
}

int phases() {
    nvtxRangePushA("step 1");
    nvtxRangePushA("forward");
    nvtxMarkA("checkpoint");
    nvtxRangePop();
    nvtxRangePushA("backward");
    nvtxRangePop();
    nvtxRangePop();
    const nvtxRangeId_t loading = nvtxRangeStartA("data loading");
    nvtxRangeEnd(loading);
    nvtxRangePushW(L"step 2");
    nvtxRangePop();

    // The *Ex calls with the default domain (a null handle) make phases too.
    const nvtxEventAttributes_t optimizer = asciiMessage("optimizer");
    nvtxDomainRangePushEx(nullptr, &optimizer);
    // A library's own domain (NCCL here) makes annotations, never phases:
    // inside "optimizer", its allocations must stay "optimizer"'s.
    nvtxDomainHandle_t nccl = nvtxDomainCreateA("NCCL");
    nvtxEventAttributes_t all_reduce{};
    all_reduce.version = NVTX_VERSION;
    all_reduce.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    all_reduce.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    all_reduce.message.registered = nvtxDomainRegisterStringA(nccl, "AllReduce");
    const int depth = nvtxDomainRangePushEx(nccl, &all_reduce);
    const int depth_after = nvtxDomainRangePop(nccl);
    const nvtxEventAttributes_t all_gather = asciiMessage("AllGather");
    const nvtxRangeId_t gather = nvtxDomainRangeStartEx(nccl, &all_gather);
    nvtxDomainRangeEnd(nccl, gather);
    nvtxDomainRangePop(nullptr);
    std::printf("done\n");
    std::fprintf(stderr, depth == 0 && depth_after == 0 && gather != 0 ? "" : "bad nvtx results\n");
    return 0;
}

// Many ranges with unique names, as torch.autograd.profiler.emit_nvtx makes
// ("aten::mm, seq = 812, ..."): prints the RSS growth they cost.
int names(long count) {
    nvtxRangePushA("warm-up");  // the tracer and its file exist from here
    nvtxRangePop();
    const long before = rssKb();
    std::string name;
    for (long i = 0; i < count; ++i) {
        name = "aten::op" + std::to_string(i % 300) + ", seq = " + std::to_string(i) +
               ", op_id = " + std::to_string(i * 7) + ", sizes = [[64, 1024], [1024, 1024]]";
        nvtxRangePushA(name.c_str());
        nvtxRangePop();
    }
    std::printf("rss_growth_kb %ld\n", rssKb() - before);
    return 0;
}

int hang() {
    nvtxRangePushA("step 1");
    nvtxRangePushA("forward");
    nvtxMarkA("before the kill");
    std::printf("ready\n");
    std::fflush(stdout);
    for (int i = 0; i < 300; ++i) usleep(100 * 1000);  // the test kills us first
    return 0;
}

int forks() {
    nvtxRangePushA("parent");
    const pid_t child = fork();
    if (child == 0) {
        // The parent's writer thread does not exist here: recording must be
        // off, and exit (which runs the tracer's atexit) must not hang.
        nvtxRangePushA("child");
        nvtxRangePop();
        std::exit(0);
    }
    int status = 0;
    waitpid(child, &status, 0);
    nvtxRangePop();
    std::printf("child %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    return 0;
}

int driver(const char* library) {
    // What the CUDA driver does at cuInit with CUDA_INJECTION64_PATH.
    void* handle = dlopen(library, RTLD_NOW);
    if (!handle) {
        std::fprintf(stderr, "dlopen failed: %s\n", dlerror());
        return 2;
    }
    using Init = int (*)();
    auto init = reinterpret_cast<Init>(dlsym(handle, "InitializeInjection"));
    if (!init) return 3;
    const int first = init();
    const int second = init();
    std::printf("still running %d %d\n", first, second);
    return 7;
}

// What happens at exit when CUDA starts after NVTX: NVTX opens the trace
// first, then CUDA registers its teardown, then (inside cuInit) the driver
// calls InitializeInjection. Atexit handlers run in reverse, and the trace
// must be closed before CUDA's teardown runs: the stand-in teardown prints
// the trace file's size, which the test compares with the final size.
int exitOrder(const char* library) {
    nvtxRangePushA("before cuda");
    std::atexit([] {
        const char* dir = std::getenv("MEMSCOPE_OUTPUT_DIR");
        const std::string path =
            std::string(dir ? dir : ".") + "/memscope-" + std::to_string(getpid()) + ".memscope";
        struct stat st {};
        const long size = stat(path.c_str(), &st) == 0 ? long(st.st_size) : -1;
        const std::string line = "teardown saw " + std::to_string(size) + "\n";
        [[maybe_unused]] ssize_t ignored = write(STDOUT_FILENO, line.data(), line.size());
    });
    void* handle = dlopen(library, RTLD_NOW);
    if (!handle) return 2;
    auto init = reinterpret_cast<int (*)()>(dlsym(handle, "InitializeInjection"));
    if (!init) return 3;
    const int result = init();
    nvtxRangePop();
    std::printf("initialized %d\n", result);
    std::fflush(stdout);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) return 1;
    if (std::strcmp(argv[1], "phases") == 0) return phases();
    if (std::strcmp(argv[1], "hang") == 0) return hang();
    if (std::strcmp(argv[1], "fork") == 0) return forks();
    if (std::strcmp(argv[1], "driver") == 0 && argc > 2) return driver(argv[2]);
    if (std::strcmp(argv[1], "exit-order") == 0 && argc > 2) return exitOrder(argv[2]);
    if (std::strcmp(argv[1], "names") == 0 && argc > 2) return names(std::atol(argv[2]));
    return 1;
}
