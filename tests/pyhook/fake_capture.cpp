// Test stand-in for libmemscope_torch_capture.so: the same ctypes API, no
// LibTorch. It writes a line per call into the file it was started with, so
// the test can see that the hook started and flushed it.
#include <cstdio>
#include <cstdlib>

namespace {
std::FILE* g_out = nullptr;
}

extern "C" {

__attribute__((visibility("default"))) const char* memscope_capture_torch_version(void) {
    const char* v = std::getenv("MEMSCOPE_FAKE_CAPTURE_TORCH_VERSION");
    return v != nullptr ? v : "0.0";
}

__attribute__((visibility("default"))) int memscope_capture_start(const char* path) {
    if (g_out != nullptr) return 2;
    g_out = std::fopen(path, "wb");
    if (g_out == nullptr) return 1;
    std::fputs("start\n", g_out);
    std::fflush(g_out);
    return 0;
}

__attribute__((visibility("default"))) int memscope_capture_flush(void) {
    if (g_out == nullptr) return 1;
    std::fputs("flush\n", g_out);
    std::fflush(g_out);
    return 0;
}

}  // extern "C"
