// The NVTX injection entry point: NVTX loads this library (NVTX_INJECTION64_PATH)
// at the first NVTX call of each module that uses NVTX (nvtx3 is header-only,
// so every such module has its own tables and calls in separately) and we fill
// its function tables with our handlers. Entries we leave alone stay no-ops.

#include <nvtx3/nvToolsExt.h>

#include <mutex>
#include <string>
#include <string_view>
#include <unordered_set>

#include "nvtx_hook.h"
#include "tracer.h"

namespace memscope::cupti {
namespace {

// wchar_t is UTF-32 on Linux; names are short, so a plain encoder will do.
// noexcept: called from NVTX's C callers, where an exception must not escape
// (an allocation failure gives a truncated name instead).
std::string utf8(const wchar_t* text) noexcept try {
    std::string out;
    if (!text) return out;
    for (; *text && out.size() < 4096; ++text) {
        const auto c = static_cast<uint32_t>(*text);
        if (c < 0x80) {
            out += char(c);
        } else if (c < 0x800) {
            out += char(0xC0 | (c >> 6));
            out += char(0x80 | (c & 0x3F));
        } else if (c < 0x10000) {
            out += char(0xE0 | (c >> 12));
            out += char(0x80 | ((c >> 6) & 0x3F));
            out += char(0x80 | (c & 0x3F));
        } else {
            out += char(0xF0 | (c >> 18));
            out += char(0x80 | ((c >> 12) & 0x3F));
            out += char(0x80 | ((c >> 6) & 0x3F));
            out += char(0x80 | (c & 0x3F));
        }
    }
    return out;
} catch (...) {
    return {};
}

// Registered strings and domains are handles we hand out: pointers to strings
// we keep for the life of the process (NVTX never gives them back).
std::mutex g_strings_mutex;
std::unordered_set<std::string>* g_strings = new std::unordered_set<std::string>();

const char* keepString(std::string text) {
    // A forked child may have inherited the mutex locked by a parent thread:
    // it hands out no handles rather than risk waiting forever.
    std::unique_lock lock(g_strings_mutex, std::try_to_lock);
    if (!lock.owns_lock()) {
        if (Tracer::instance().disabled()) return nullptr;
        lock.lock();
    }
    return g_strings->insert(std::move(text)).first->c_str();
}

std::string message(const nvtxEventAttributes_t* attributes) noexcept try {
    // Older attribute versions are shorter; read the message only if present.
    constexpr size_t kNeeded =
        offsetof(nvtxEventAttributes_t, message) + sizeof(nvtxMessageValue_t);
    if (!attributes || attributes->size < kNeeded) return {};
    switch (attributes->messageType) {
        case NVTX_MESSAGE_TYPE_ASCII:
            return attributes->message.ascii ? attributes->message.ascii : "";
        case NVTX_MESSAGE_TYPE_UNICODE:
            return utf8(attributes->message.unicode);
        case NVTX_MESSAGE_TYPE_REGISTERED: {
            const auto* text = reinterpret_cast<const char*>(attributes->message.registered);
            return text ? text : "";
        }
        default:
            return {};
    }
} catch (...) {
    return {};
}

std::string_view safe(const char* text) {
    return text ? std::string_view(text) : std::string_view();
}

// --- core module (default domain) ---
void NVTX_API markEx(const nvtxEventAttributes_t* a) {
    nvtx::mark(message(a));
}
void NVTX_API markA(const char* m) {
    nvtx::mark(safe(m));
}
void NVTX_API markW(const wchar_t* m) {
    nvtx::mark(utf8(m));
}
nvtxRangeId_t NVTX_API rangeStartEx(const nvtxEventAttributes_t* a) {
    return nvtx::start(message(a));
}
nvtxRangeId_t NVTX_API rangeStartA(const char* m) {
    return nvtx::start(safe(m));
}
nvtxRangeId_t NVTX_API rangeStartW(const wchar_t* m) {
    return nvtx::start(utf8(m));
}
void NVTX_API rangeEnd(nvtxRangeId_t id) {
    nvtx::end(id);
}
int NVTX_API rangePushEx(const nvtxEventAttributes_t* a) {
    return nvtx::push(message(a));
}
int NVTX_API rangePushA(const char* m) {
    return nvtx::push(safe(m));
}
int NVTX_API rangePushW(const wchar_t* m) {
    return nvtx::push(utf8(m));
}
int NVTX_API rangePop() {
    return nvtx::pop();
}

// --- core2 module (domains) ---
// A null handle is the default domain (nvtx3's C++ API passes it for
// nvtx3::domain::global): phases, as the core calls. A named domain's ranges
// are annotations (nvtx_hook.h says why). Its handle is the name we keep.
const char* domainName(nvtxDomainHandle_t domain) {
    return reinterpret_cast<const char*>(domain);
}
void NVTX_API domainMarkEx(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* a) {
    if (domain)
        nvtx::domainMark(domainName(domain), message(a));
    else
        nvtx::mark(message(a));
}
nvtxRangeId_t NVTX_API domainRangeStartEx(nvtxDomainHandle_t domain,
                                          const nvtxEventAttributes_t* a) {
    return domain ? nvtx::domainStart(domainName(domain), message(a)) : nvtx::start(message(a));
}
void NVTX_API domainRangeEnd(nvtxDomainHandle_t, nvtxRangeId_t id) {
    nvtx::end(id);  // the id tells a phase from a domain range
}
int NVTX_API domainRangePushEx(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* a) {
    return domain ? nvtx::domainPush(domainName(domain), message(a)) : nvtx::push(message(a));
}
int NVTX_API domainRangePop(nvtxDomainHandle_t domain) {
    return domain ? nvtx::domainPop(domainName(domain)) : nvtx::pop();
}
nvtxStringHandle_t NVTX_API domainRegisterStringA(nvtxDomainHandle_t, const char* s) {
    try {
        return reinterpret_cast<nvtxStringHandle_t>(const_cast<char*>(keepString(s ? s : "")));
    } catch (...) {
        return nullptr;
    }
}
nvtxStringHandle_t NVTX_API domainRegisterStringW(nvtxDomainHandle_t, const wchar_t* s) {
    try {
        return reinterpret_cast<nvtxStringHandle_t>(const_cast<char*>(keepString(utf8(s))));
    } catch (...) {
        return nullptr;
    }
}
nvtxDomainHandle_t NVTX_API domainCreateA(const char* name) {
    try {
        return reinterpret_cast<nvtxDomainHandle_t>(
            const_cast<char*>(keepString(name ? name : "")));
    } catch (...) {
        return nullptr;
    }
}
nvtxDomainHandle_t NVTX_API domainCreateW(const wchar_t* name) {
    try {
        return reinterpret_cast<nvtxDomainHandle_t>(const_cast<char*>(keepString(utf8(name))));
    } catch (...) {
        return nullptr;
    }
}

struct Slot {
    unsigned id;
    NvtxFunctionPointer function;
};

template <typename F>
NvtxFunctionPointer fn(F f) {
    return reinterpret_cast<NvtxFunctionPointer>(f);
}

// Writes our handlers into one module's table. Each table entry points at the
// variable NVTX calls through; ids past the table's size are skipped (an
// older NVTX has fewer entries).
bool fill(const NvtxExportTableCallbacks& callbacks, NvtxCallbackModule module,
          std::initializer_list<Slot> slots) {
    NvtxFunctionTable table = nullptr;
    unsigned int size = 0;
    if (!callbacks.GetModuleFunctionTable(module, &table, &size) || !table) return false;
    for (const Slot& slot : slots)
        if (slot.id < size && table[slot.id]) *table[slot.id] = slot.function;
    return true;
}

}  // namespace
}  // namespace memscope::cupti

extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(
    NvtxGetExportTableFunc_t get_export_table) {
    using namespace memscope::cupti;
    if (!get_export_table) return 0;
    const auto* callbacks =
        static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
    if (!callbacks || callbacks->struct_size < sizeof(NvtxExportTableCallbacks) ||
        !callbacks->GetModuleFunctionTable)
        return 0;
    const bool core = fill(*callbacks, NVTX_CB_MODULE_CORE,
                           {
                               {NVTX_CBID_CORE_MarkEx, fn(markEx)},
                               {NVTX_CBID_CORE_MarkA, fn(markA)},
                               {NVTX_CBID_CORE_MarkW, fn(markW)},
                               {NVTX_CBID_CORE_RangeStartEx, fn(rangeStartEx)},
                               {NVTX_CBID_CORE_RangeStartA, fn(rangeStartA)},
                               {NVTX_CBID_CORE_RangeStartW, fn(rangeStartW)},
                               {NVTX_CBID_CORE_RangeEnd, fn(rangeEnd)},
                               {NVTX_CBID_CORE_RangePushEx, fn(rangePushEx)},
                               {NVTX_CBID_CORE_RangePushA, fn(rangePushA)},
                               {NVTX_CBID_CORE_RangePushW, fn(rangePushW)},
                               {NVTX_CBID_CORE_RangePop, fn(rangePop)},
                           });
    // Domains are optional: an NVTX without them still gets the core hooks.
    fill(*callbacks, NVTX_CB_MODULE_CORE2,
         {
             {NVTX_CBID_CORE2_DomainMarkEx, fn(domainMarkEx)},
             {NVTX_CBID_CORE2_DomainRangeStartEx, fn(domainRangeStartEx)},
             {NVTX_CBID_CORE2_DomainRangeEnd, fn(domainRangeEnd)},
             {NVTX_CBID_CORE2_DomainRangePushEx, fn(domainRangePushEx)},
             {NVTX_CBID_CORE2_DomainRangePop, fn(domainRangePop)},
             {NVTX_CBID_CORE2_DomainRegisterStringA, fn(domainRegisterStringA)},
             {NVTX_CBID_CORE2_DomainRegisterStringW, fn(domainRegisterStringW)},
             {NVTX_CBID_CORE2_DomainCreateA, fn(domainCreateA)},
             {NVTX_CBID_CORE2_DomainCreateW, fn(domainCreateW)},
         });
    if (const auto* version =
            static_cast<const NvtxExportTableVersionInfo*>(get_export_table(NVTX_ETID_VERSIONINFO));
        version && version->struct_size >= sizeof(NvtxExportTableVersionInfo) &&
        version->SetInjectionNvtxVersion)
        version->SetInjectionNvtxVersion(NVTX_VERSION);
    return core ? 1 : 0;
}
