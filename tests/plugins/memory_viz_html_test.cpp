// MemoryViz HTML pages (torch.cuda._memory_viz trace_plot / segment_plot):
// the embedded snapshot opens as the same trace as the pickle it was made
// from, the registry picks the page by its content, and broken or hostile
// pages give an error that says what is wrong, never a crash (these tests
// also run under ASan/UBSan).
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "base64_decoder.h"
#include "memscope/open/plugin_registry.h"
#include "memscope/plugins/pytorch_snapshot.h"
#include "test_util.h"

namespace memscope {
namespace {

namespace ps = pytorch_snapshot;

std::string base64(std::span<const std::byte> bytes) {
    static constexpr char kAlphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    for (size_t i = 0; i < bytes.size(); i += 3) {
        uint32_t g = uint32_t(bytes[i]) << 16;
        if (i + 1 < bytes.size()) g |= uint32_t(bytes[i + 1]) << 8;
        if (i + 2 < bytes.size()) g |= uint32_t(bytes[i + 2]);
        const size_t n = std::min<size_t>(3, bytes.size() - i);
        for (size_t k = 0; k < 4; ++k) out += k <= n ? kAlphabet[(g >> (18 - 6 * k)) & 63] : '=';
    }
    return out;
}

std::span<const std::byte> bytesOf(std::string_view s) {
    return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

// The page torch's _format_viz writes: the pickle padded with 1 to 3 zero
// bytes to a multiple of 3, base64 in a JSON list of one file, in the
// template of torch 2.1 to 2.11.
std::string torchPage(std::vector<std::byte> pickle,
                      std::string_view view = "Active Memory Timeline") {
    pickle.resize(pickle.size() + (3 - pickle.size() % 3), std::byte(0));
    return "\n<!DOCTYPE html>\n<html>\n<head>\n</head>\n<body>\n<script type=\"module\">\n"
           "import {add_local_files} from "
           "\"https://cdn.jsdelivr.net/gh/pytorch/pytorch@main/torch/utils/viz/MemoryViz.js\"\n"
           "const local_files = [{\"name\": \"snapshot.pickle\", \"base64\": \"" +
           base64(pickle) + "\"}]\nadd_local_files(local_files, '" + std::string(view) +
           "')\n</script>\n</body>\n";
}

std::string writeFile(const std::string& name, std::string_view text) {
    const auto path = test::tempPath(name);
    std::ofstream(path, std::ios::binary) << text;
    return path.string();
}

// A small timed trace on devices 0 and 1 with frames and an end state,
// written by the exporter.
std::vector<std::byte> makePickle() {
    Trace t;
    t.metadata.time_base = TimeBase::Nanoseconds;
    const Frame f{t.internString("forward"), t.internString("train.py"), 12};
    const FrameId fid = t.internFrame(f);
    const StackId stack = t.internStack(std::span<const FrameId>(&fid, 1));
    int64_t time = 1'700'000'000'000'000'000;
    for (int i = 0; i < 40; ++i) {
        Event e;
        e.time = time += 1000;
        e.kind = i % 3 == 2 ? EventKind::FreeCompleted : EventKind::Alloc;
        e.address = 0x10000 + uint64_t(i / 3) * 0x1000;
        e.size = 512 + uint64_t(i) * 64;
        e.device = int16_t(i % 2);
        e.stack = stack;
        t.events.push_back(e);
    }
    const auto path = test::tempPath("html-source.pickle");
    auto written = ps::exportFile(t, path.string());
    EXPECT_TRUE(written.ok()) << written.message();
    return test::readBytes(path);
}

void expectSameTrace(const Trace& want, const Trace& got, const std::string& what) {
    ASSERT_EQ(got.events.size(), want.events.size()) << what;
    for (size_t i = 0; i < want.events.size(); ++i) {
        const Event& a = want.events[i];
        const Event& b = got.events[i];
        ASSERT_TRUE(a.time == b.time && a.address == b.address && a.size == b.size &&
                    a.kind == b.kind && a.device == b.device && a.phase == b.phase)
            << what << ": event " << i;
    }
    EXPECT_EQ(got.devices(), want.devices()) << what;
    EXPECT_EQ(got.attributes.size(), want.attributes.size()) << what;
    EXPECT_EQ(got.annotations.size(), want.annotations.size()) << what;
    EXPECT_EQ(got.phases.size(), want.phases.size()) << what;
    EXPECT_EQ(got.frames().size(), want.frames().size()) << what;
    EXPECT_EQ(got.allocator_state.has_value(), want.allocator_state.has_value()) << what;
    EXPECT_EQ(got.metadata.time_base, want.metadata.time_base) << what;
    for (const auto& [k, v] : want.metadata.properties) {
        const std::string* p = got.metadata.property(k);
        ASSERT_TRUE(p) << what << ": property " << k << " missing";
        EXPECT_EQ(*p, v) << what << ": property " << k;
    }
    const TraceSummary a = test::summaryOf(want), b = test::summaryOf(got);
    ASSERT_EQ(a.devices.size(), b.devices.size()) << what;
    for (const auto& [d, x] : a.devices) {
        ASSERT_TRUE(b.devices.count(d)) << what << ": device " << d;
        const DeviceSummary& y = b.devices.at(d);
        EXPECT_EQ(x.peak_active_bytes, y.peak_active_bytes) << what << ": device " << d;
        EXPECT_EQ(x.peak_event_index, y.peak_event_index) << what << ": device " << d;
        EXPECT_EQ(x.reserved_bytes, y.reserved_bytes) << what << ": device " << d;
        EXPECT_EQ(x.trace_entries, y.trace_entries) << what << ": device " << d;
    }
}

Result<Trace> fromPage(std::string_view page, ps::HtmlLimits limits = {}) {
    return ps::importHtmlBytes(bytesOf(page), {}, "page", limits);
}

// The error of `page`, which must fail.
std::string errorOf(std::string_view page, ps::HtmlLimits limits = {}) {
    auto t = fromPage(page, limits);
    EXPECT_FALSE(t.ok()) << "the page opened";
    return t.ok() ? std::string() : t.message();
}

TEST(MemoryVizHtml, OpensAsTheEmbeddedPickle) {
    const std::vector<std::byte> pickle = makePickle();
    auto want = ps::importBytes(pickle, {}, "x");
    ASSERT_TRUE(want.ok()) << want.message();
    ASSERT_EQ(want->devices().size(), 2u);
    // Every padding length torch writes: 3, 2 and 1 zero bytes.
    for (size_t cut : {size_t(0), size_t(1), size_t(2)}) {
        std::vector<std::byte> p = pickle;
        p.resize(p.size() + cut, std::byte(0));  // trailing bytes after STOP are never read
        const std::string page = torchPage(p);
        auto got = fromPage(page);
        ASSERT_TRUE(got.ok()) << got.message();
        expectSameTrace(*want, *got, "padding " + std::to_string(cut));
        ASSERT_TRUE(got->metadata.property(ps::kHtmlContainerKey));
        EXPECT_EQ(*got->metadata.property(ps::kHtmlContainerKey), "memory_viz html page");
        ASSERT_TRUE(got->metadata.property(ps::kHtmlViewKey));
        EXPECT_EQ(*got->metadata.property(ps::kHtmlViewKey), "Active Memory Timeline");
        EXPECT_EQ(got->metadata.source_format, "pytorch-snapshot");
    }
}

TEST(MemoryVizHtml, TheRegistryPicksThePageByItsContent) {
    const std::vector<std::byte> pickle = makePickle();
    const std::string page = torchPage(pickle, "Allocator State History");
    PluginRegistry registry;
    registerPytorchSnapshotPlugins(registry);
    for (const std::string name : {"trace.html", "attachment.txt", "no_extension"}) {
        const std::string path = writeFile(name, page);
        auto imp = registry.importerFor(path);
        ASSERT_TRUE(imp.ok()) << imp.message();
        EXPECT_EQ((*imp)->id(), ps::kHtmlId) << name;
        auto t = registry.load(path, {});
        ASSERT_TRUE(t.ok()) << t.message();
        EXPECT_EQ(t->events.size(), 40u);
        EXPECT_EQ(*t->metadata.property(ps::kHtmlViewKey), "Allocator State History");
        EXPECT_EQ(t->metadata.name, std::filesystem::path(name).stem().string());
        std::filesystem::remove(path);
    }
    // The pickle itself still goes to the pickle importer.
    const auto pickle_path = test::tempPath("plain.pickle");
    std::ofstream(pickle_path, std::ios::binary)
        .write(reinterpret_cast<const char*>(pickle.data()), std::streamsize(pickle.size()));
    auto imp = registry.importerFor(pickle_path.string());
    ASSERT_TRUE(imp.ok()) << imp.message();
    EXPECT_EQ((*imp)->id(), ps::kId);
    // Any other page named .html is the HTML importer's, to explain.
    const std::string other = writeFile("other.html", "<html><body>hello</body></html>");
    auto t = registry.load(other, {});
    ASSERT_FALSE(t.ok());
    EXPECT_NE(t.message().find("other.html: this is an HTML page but holds no memory_viz snapshot"),
              std::string::npos)
        << t.message();
    std::filesystem::remove(other);
}

TEST(MemoryVizHtml, RealSnapshotsOpenTheSameFromAPage) {
    MEMSCOPE_SKIP_WITHOUT_FIXTURES();
    size_t seen = 0;
    for (const auto& entry : std::filesystem::directory_iterator(test::fixtures() / "snapshots")) {
        const std::string ext = entry.path().extension().string();
        if (ext != ".pickle" && ext != ".pkl") continue;
        ++seen;
        const std::string name = entry.path().filename().string();
        auto want = ps::importFile(entry.path().string());
        ASSERT_TRUE(want.ok()) << name << ": " << want.message();
        const std::string path = writeFile(entry.path().stem().string() + ".html",
                                           torchPage(test::readBytes(entry.path())));
        auto got = ps::importHtmlFile(path);
        ASSERT_TRUE(got.ok()) << name << ": " << got.message();
        expectSameTrace(*want, *got, name);
        EXPECT_EQ(got->metadata.name, want->metadata.name);
        std::filesystem::remove(path);
    }
    EXPECT_GT(seen, 0u);
}

TEST(MemoryVizHtml, WrappedAndEscapedBase64IsRead) {
    const std::vector<std::byte> pickle = makePickle();
    auto want = ps::importBytes(pickle);
    ASSERT_TRUE(want.ok()) << want.message();
    std::string page = torchPage(pickle);
    // Lines of 76 with CRLF as mail clients wrap, and every '/' JSON-escaped,
    // as a page passed through another JSON writer may be.
    const size_t begin = page.find("\"base64\": \"") + 11;
    const size_t end = page.find('"', begin);
    std::string wrapped;
    for (size_t i = begin; i < end; ++i) {
        if ((i - begin) % 76 == 0 && i != begin) wrapped += "\r\n  ";
        if (page[i] == '/') wrapped += '\\';
        wrapped += page[i];
    }
    page = page.substr(0, begin) + wrapped + page.substr(end);
    auto got = fromPage(page);
    ASSERT_TRUE(got.ok()) << got.message();
    expectSameTrace(*want, *got, "wrapped");
}

TEST(MemoryVizHtml, Base64DecoderVectors) {
    auto decode = [](std::string_view text, uint64_t max = 1 << 20) -> Result<std::string> {
        std::vector<std::byte> out;
        ps::Base64Decoder d(out, max);
        // Fed one character at a time: groups span pieces.
        for (size_t i = 0; i < text.size(); ++i)
            if (auto r = d.feed(bytesOf(text.substr(i, 1))); !r) return r.error();
        if (auto r = d.finish(); !r) return r.error();
        return std::string(reinterpret_cast<const char*>(out.data()), out.size());
    };
    for (const auto& [in, want] : std::vector<std::pair<std::string, std::string>>{
             {"", ""},
             {"Zg==", "f"},
             {"Zm8=", "fo"},
             {"Zm9v", "foo"},
             {"Zm9vYg==", "foob"},
             {"Zm9vYmE=", "fooba"},
             {"Zm9vYmFy", "foobar"},
             {" Zm9v\nYmFy\t", "foobar"},
             {"Zm9v\\/A==", std::string("foo\xfc", 4)}}) {
        auto got = decode(in);
        ASSERT_TRUE(got.ok()) << in << ": " << got.message();
        EXPECT_EQ(*got, want) << in;
    }
    for (const std::string bad : {"Zm9", "Z", "Zm9vY", "Zg=", "Z===", "=Zg=", "Zg==Zg==", "Zm9v*",
                                  "Zm-v", "Zm_v", "Zm9v\\A", "Zm9v\\", "Zm9v\xc3\xa9"}) {
        auto got = decode(bad);
        EXPECT_FALSE(got.ok()) << "'" << bad << "' decoded";
    }
    EXPECT_FALSE(decode("Zm9vYmFy", 5).ok());
    EXPECT_TRUE(decode("Zm9vYmFy", 6).ok());
}

TEST(MemoryVizHtml, BrokenPagesSayWhatIsWrong) {
    const std::vector<std::byte> pickle = makePickle();
    const std::string page = torchPage(pickle);
    const size_t begin = page.find("\"base64\": \"") + 11;
    const size_t end = page.find('"', begin);

    // Truncated: the file ends inside the payload.
    EXPECT_NE(errorOf(page.substr(0, begin + (end - begin) / 2)).find("cut short"),
              std::string::npos);
    // A payload whose length is not a whole number of groups.
    {
        std::string p = page;
        p.erase(begin + 5, 1);
        EXPECT_NE(errorOf(p).find("cut short"), std::string::npos) << errorOf(p);
    }
    // Bad characters: one not in the alphabet, URL-safe ones, a non-ASCII byte.
    for (const char c : {'*', '-', '_', '\x01', '\xe9', '<'}) {
        std::string p = page;
        p[begin + 100] = c;
        const std::string e = errorOf(p);
        EXPECT_NE(e.find("is not base64"), std::string::npos) << e;
        EXPECT_NE(e.find("at character 100"), std::string::npos) << e;
    }
    // A payload larger than the limit is not decoded.
    {
        ps::HtmlLimits limits;
        limits.max_snapshot_bytes = 1024;
        EXPECT_NE(errorOf(page, limits).find("larger than the limit of 1024 bytes"),
                  std::string::npos);
    }
    // Pages without a snapshot.
    EXPECT_NE(errorOf("<!DOCTYPE html><html><body><p>no plot</p></body></html>")
                  .find("this is an HTML page but holds no memory_viz snapshot"),
              std::string::npos);
    EXPECT_NE(errorOf("<html><img src='data:image/png;base64,iVBORw0KGgo='></html>")
                  .find("export_memory_timeline"),
              std::string::npos);
    EXPECT_NE(errorOf("<html><script>let d = {\"elements_size\": [1], \"suffix_table\": []}"
                      "</script></html>")
                  .find("torch 2.0"),
              std::string::npos);
    EXPECT_NE(errorOf("<html><script>const local_files = [{\"base64\": \"\"}]</script></html>")
                  .find("empty"),
              std::string::npos);
    // "base64" as a word, not a key, is no payload.
    EXPECT_NE(errorOf("<html>\"base64\" is an encoding; 'base64' : 3</html>")
                  .find("holds no memory_viz snapshot"),
              std::string::npos);
    // Payloads that are not a snapshot pickle.
    const std::string not_pickle = base64(bytesOf("hello, world"));
    EXPECT_NE(
        errorOf("<html>[{\"name\": \"snapshot.pickle\", \"base64\": \"" + not_pickle + "\"}]")
            .find("the snapshot the page embeds ('snapshot.pickle') cannot be read: not a pickle"),
        std::string::npos);
    const std::vector<std::byte> int_pickle = {std::byte(0x80), std::byte(4), std::byte('K'),
                                               std::byte(7), std::byte('.')};
    EXPECT_NE(errorOf("<html>[{\"base64\": \"" + base64(int_pickle) + "\"}]").find("not a memory"),
              std::string::npos);
    const std::vector<std::byte> cut_pickle(pickle.begin(), pickle.begin() + 90);
    EXPECT_FALSE(fromPage(torchPage(cut_pickle)).ok());
    // Not a page at all.
    EXPECT_NE(std::string(errorOf("{\"base64\": \"Zm9v\"}")).find("not an HTML page"),
              std::string::npos);
}

TEST(MemoryVizHtml, SeveralEmbeddedFilesWarnAndReadTheFirst) {
    const std::vector<std::byte> pickle = makePickle();
    std::string page = torchPage(pickle);
    const size_t list_end = page.find("\"}]") + 2;
    page.insert(list_end, ", {\"name\": \"other.pickle\", \"base64\": \"Zm9v\"}");
    std::vector<LoadWarning> warnings;
    TaskContext ctx;
    ctx.warnings = &warnings;
    auto t = ps::importHtmlBytes(bytesOf(page), ctx);
    ASSERT_TRUE(t.ok()) << t.message();
    EXPECT_EQ(t->events.size(), 40u);
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_NE(warnings[0].message.find("'snapshot.pickle'"), std::string::npos);
}

TEST(MemoryVizHtml, CancelIsNotReportedAsABadPage) {
    const std::string page = torchPage(makePickle());
    std::atomic<bool> cancel{true};
    TaskContext ctx;
    ctx.cancel = &cancel;
    auto t = ps::importHtmlBytes(bytesOf(page), ctx);
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.message(), "cancelled");
}

TEST(MemoryVizHtml, ProbeReadsContentNotOnlyTheName) {
    const std::string page = torchPage(makePickle());
    const auto head = bytesOf(std::string_view(page).substr(0, 4096));
    EXPECT_EQ(ps::probeHtml(head, "x.bin"), 100);
    EXPECT_EQ(ps::probeHtml(bytesOf("\xEF\xBB\xBF <!-- saved --> <HTML><body>"), "x.html"), 30);
    EXPECT_EQ(ps::probeHtml(bytesOf("<!doctype html>"), "x"), 15);
    EXPECT_EQ(ps::probeHtml(bytesOf("{\"traceEvents\": []}"), "x.html"), 0);
    EXPECT_EQ(ps::probeHtml(bytesOf("<!-- never closed"), "x.html"), 0);
    EXPECT_EQ(ps::probeHtml(bytesOf(""), "x.html"), 0);
    // The pickle importer does not claim a page, nor the page importer a pickle.
    EXPECT_EQ(ps::probe(head, "x.html"), 0);
    const std::vector<std::byte> pickle = makePickle();
    EXPECT_EQ(ps::probeHtml(std::span<const std::byte>(pickle).first(64), "x.html"), 0);
}

TEST(MemoryVizHtml, MutatedPagesNeverCrash) {
    const std::string page = torchPage(makePickle());
    std::mt19937 rng(7);
    for (int i = 0; i < 300; ++i) {
        std::string p = page;
        const int edits = 1 + int(rng() % 4);
        for (int k = 0; k < edits; ++k) {
            const size_t at = rng() % p.size();
            switch (rng() % 3) {
                case 0:
                    p[at] = char(rng());
                    break;
                case 1:
                    p.erase(at, 1 + rng() % 8);
                    break;
                default:
                    p.resize(at);
                    break;
            }
            if (p.empty()) p = "<";
        }
        auto t = fromPage(p);
        if (!t.ok()) {
            EXPECT_FALSE(t.message().empty());
        }
    }
}

}  // namespace
}  // namespace memscope
