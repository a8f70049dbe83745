// Calls NVTX (and forks, hangs or loads the tracer the way the CUDA driver
// does) so that the injection tests can check what lands in the trace.
// Usage: memscope_cupti_test_driver phases|hang|fork|driver [LIBRARY]
#include <dlfcn.h>
#include <nvtx3/nvToolsExt.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

namespace {

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

    nvtxDomainHandle_t domain = nvtxDomainCreateA("memscope-test");
    nvtxEventAttributes_t attributes{};
    attributes.version = NVTX_VERSION;
    attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    attributes.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    attributes.message.registered = nvtxDomainRegisterStringA(domain, "optimizer");
    nvtxDomainRangePushEx(domain, &attributes);
    nvtxDomainRangePop(domain);
    std::printf("done\n");
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

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) return 1;
    if (std::strcmp(argv[1], "phases") == 0) return phases();
    if (std::strcmp(argv[1], "hang") == 0) return hang();
    if (std::strcmp(argv[1], "fork") == 0) return forks();
    if (std::strcmp(argv[1], "driver") == 0 && argc > 2) return driver(argv[2]);
    return 1;
}
