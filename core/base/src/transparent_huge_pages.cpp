#include "memscope/base/transparent_huge_pages.h"

#include <fstream>
#include <iterator>
#include <string>

namespace memscope {
namespace {

// The bracketed word of "always [madvise] never".
TransparentHugePages readMode() {
    std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
    if (!in) return TransparentHugePages::Unknown;
    const std::string modes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (modes.find("[always]") != std::string::npos) return TransparentHugePages::Always;
    if (modes.find("[madvise]") != std::string::npos) return TransparentHugePages::Madvise;
    if (modes.find("[never]") != std::string::npos) return TransparentHugePages::Never;
    return TransparentHugePages::Unknown;
}

}  // namespace

TransparentHugePages transparentHugePages() {
    static const TransparentHugePages mode = readMode();
    return mode;
}

}  // namespace memscope
