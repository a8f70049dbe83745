// memscope-bench-gui [EVENTS | --events N] [--file PATH]: loads a generated
// trace (10 million events by default) or a trace file (any format memscope
// opens), opens a run view offscreen and prints:
//   - load and timeline build times ("loaded FILE in X s", "timeline built in
//     X s"),
//   - first paint after loading completes (target <= 100 ms, issue 29),
//   - median and worst frame time of 100 scripted zoom/pan steps, by category
//     and by allocation side by side, mixed, zoomed out and zoomed in
//     (target <= 16 ms), with the page faults per frame,
//   - the switch to by allocation as a frame of its own, how many zoomed-in
//     frames took columns over from the frame before (pans), and the core
//     layout alone for a jump to 0.5 % of the trace,
//   - the GUI's memory on top of core's model (target <= 1x).
// Run with QT_QPA_PLATFORM=offscreen (set here when unset).
#include <qcustomplot.h>
#include <sys/resource.h>

#include <QApplication>
#include <QElapsedTimer>
#include <QFileInfo>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "../common/bench_args.h"
#include "../common/malloc_mode.h"
#include "loading/run_loader.h"
#include "memscope/base/huge_page_malloc.h"
#include "memscope/view/layout_pyramid.h"
#include "run_view/phase_bands.h"
#include "run_view/run_view.h"
#include "run_view/timeline_plot.h"
#include "run_view/zoom_state.h"

#ifdef MEMSCOPE_HAVE_TRACE_GENERATOR
#include "trace_generator.h"
#endif

namespace {

// The process's high-water mark of resident memory (VmHWM).
double peakRssMiB() {
    std::ifstream f("/proc/self/status");
    std::string line;
    while (std::getline(f, line))
        if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;  // kB
    return 0;
}

double rssMiB() {
    std::ifstream f("/proc/self/statm");
    long pages = 0, resident = 0;
    f >> pages >> resident;
    return double(resident) * 4096.0 / (1024.0 * 1024.0);
}

#ifndef MEMSCOPE_HAVE_TRACE_GENERATOR
// Fallback when the shared generator is not built: a plain alloc/free churn.
memscope::Trace generate(uint64_t events) {
    memscope::Trace t;
    t.metadata.name = "bench";
    std::mt19937_64 rng(1);
    std::vector<std::pair<uint64_t, uint64_t>> live;
    uint64_t addr = 0x7f0000000000;
    for (uint64_t i = 0; i < events; ++i) {
        memscope::Event e;
        e.time = int64_t(i) * 1000;
        if (live.size() < 2000 || (rng() % 2 == 0 && live.size() < 200000)) {
            e.kind = memscope::EventKind::Alloc;
            e.size = 512 * (1 + rng() % 4096);
            e.address = addr;
            addr += e.size;
            e.category = memscope::kAllCategories[rng() % memscope::kCategoryCount];
            live.emplace_back(e.address, e.size);
        } else {
            const size_t k = rng() % live.size();
            e.kind = memscope::EventKind::FreeCompleted;
            e.address = live[k].first;
            e.size = live[k].second;
            live[k] = live.back();
            live.pop_back();
        }
        t.events.push_back(e);
    }
    return t;
}
#endif

struct Frames {
    double median = 0, worst = 0, mean = 0;
    double build = 0;  // mean ms of the band reduction alone (the rest is drawing)
    double plot = 0;  // mean ms until the timeline plot is drawn (the rest: overview, window paint)
    double raster = 0;  // median ms of filling the shown layer's pixels (a part of `plot`)
    // Mean minor page faults per frame: memory a frame maps afresh (about
    // 2.5 us each on this project's VM) instead of reusing.
    double faults = 0;
    // The slowest frame's step and its faults: a first touch of fresh
    // memory, or a sweep that found no columns to take over.
    int worstStep = 0;
    long worstFaults = 0;
    // By allocation: of the frames swept on a grid, how many took columns
    // over from the frame before (a pan), and what share of their columns.
    int panFrames = 0, sweptFrames = 0;
    double takenOver = 0;
};

long minorFaults() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return u.ru_minflt;
}

enum class Script { Mixed, ZoomedOut, ZoomedIn };

// One scripted step: mixed zooms and pans; or the whole trace (90 % of it,
// panned); or 0.5 % of it at a random place, panned.
void step(memscope::gui::ZoomState* z, Script script, int i, std::mt19937& rng) {
    const double full = z->fullEnd() - z->fullBegin();
    auto at = [&](double fraction, double width) {
        const double c = z->fullBegin() + full * fraction;
        z->setRange(c - width / 2, c + width / 2);
    };
    if (script == Script::ZoomedOut) {
        at(0.5 + (i % 2 ? 0.04 : -0.04), 0.9 * full);
        return;
    }
    if (script == Script::ZoomedIn) {
        if (i % 4 == 0)
            at(std::uniform_real_distribution<double>(0.05, 0.95)(rng), 0.005 * full);
        else
            z->panBy(i % 2 ? 0.2 : -0.1);
        return;
    }
    const double w = z->end() - z->begin();
    const double c = z->begin() + w * std::uniform_real_distribution<double>(0.2, 0.8)(rng);
    switch (i % 5) {
        case 0:
        case 1:  // zoom in
            z->zoomBy(0.6, c);
            break;
        case 2:  // pan
            z->panBy(i % 2 ? 0.3 : -0.3);
            break;
        case 3:  // zoom out
            z->zoomBy(1.4, c);
            break;
        case 4:  // pan back, now and then the whole trace
            if (i % 20 == 4)
                z->reset();
            else
                z->panBy(-0.15);
            break;
    }
}

Frames script(memscope::gui::RunView& view, int steps, Script kind = Script::Mixed) {
    using memscope::gui::ZoomState;
    ZoomState* z = view.zoom();
    z->reset();
    std::mt19937 rng(7);
    std::vector<double> ms, raster;
    double build = 0, plotMs = 0;
    Frames f;
    const long faultsBefore = minorFaults();
    for (int i = 0; i < steps; ++i) {
        QElapsedTimer t;
        const long faultsAtStart = minorFaults();
        t.start();
        step(z, kind, i, rng);
        view.plot()->renderNow();  // rebuild from levelOfDetail + immediate replot
        plotMs += double(t.nsecsElapsed()) / 1e6 / steps;
        QCoreApplication::processEvents();  // overview brush, queued paints
        ms.push_back(double(t.nsecsElapsed()) / 1e6);
        if (ms.back() >= ms[size_t(f.worstStep)]) {
            f.worstStep = i;
            f.worstFaults = minorFaults() - faultsAtStart;
        }
        build += view.plot()->lastBuildMs() / steps;
        raster.push_back(view.plot()->lastRasterMs());
        const memscope::AllocationLayout& layout = view.plot()->allocationLayout();
        if (layout.grid_step > 0 && !layout.columns.empty()) {
            ++f.sweptFrames;
            if (layout.reused_columns > 0) {
                ++f.panFrames;
                f.takenOver += double(layout.reused_columns) / double(layout.columns.size());
            }
        }
    }
    std::vector<double> s = ms;
    std::sort(s.begin(), s.end());
    f.median = s[s.size() / 2];
    f.worst = s.back();
    for (double v : s) f.mean += v / double(s.size());
    f.build = build;
    std::nth_element(raster.begin(), raster.begin() + ptrdiff_t(raster.size() / 2), raster.end());
    f.raster = raster[raster.size() / 2];
    f.plot = plotMs;
    f.faults = double(minorFaults() - faultsBefore) / steps;
    return f;
}

}  // namespace

int main(int argc, char** argv) {
    // As the front ends run (huge_page_malloc.h), so that the figures are theirs.
    memscope::useHugePageMalloc(argv);
    static const char kUsage[] =
        "usage: memscope-bench-gui [EVENTS | --events N] [--file PATH [--opens N]]";
    static const char kHelp[] =
        "Loads a generated trace of N events (default 10000000, on one device) or PATH, opens a\n"
        "run view offscreen (QT_QPA_PLATFORM=offscreen unless set) and prints the load and\n"
        "timeline times, the first paint after load, median and worst frame times of 100\n"
        "scripted zoom/pan steps by category and by allocation (mixed, zoomed out, zoomed in),\n"
        "the means of the layout or band reduction and of the whole plot, the median raster,\n"
        "page faults per frame, the slowest frame's step and its faults, hover cost, the\n"
        "switch to by allocation, the share of zoomed-in frames that took columns over from\n"
        "the frame before, the core layout of a jump to 0.5% of the trace, and the GUI's\n"
        "memory on top of core's model.\n"
        "  EVENTS, --events N   events to generate, 1..10000000000\n"
        "  --file PATH          a trace file instead (snapshot, kineto, native, ...)\n"
        "  --opens N            open the file N times, 1..9 (default 1), each freed before the\n"
        "                       next; the load time is their median (a VM's speed drifts), and\n"
        "                       the last one is drawn\n"
        "Targets (issue 29): frame time median and worst <= 16 ms in every row; first paint\n"
        "<= 100 ms after load; GUI memory <= 1x core's.\n";
    uint64_t events = 10'000'000ull;
    uint64_t opens = 1;
    QString file;
    {
        memscope::bench::Args args(argc, argv, kUsage, kHelp);
        std::string path;
        while (args.more()) {
            if (args.option("--file", path)) {
                file = QString::fromLocal8Bit(path.c_str());
                continue;
            }
            if (args.option("--events", events, uint64_t(1), uint64_t(10'000'000'000ull))) continue;
            if (args.option("--opens", opens, uint64_t(1), uint64_t(9))) continue;
            if (args.positional("EVENTS", events, uint64_t(1), uint64_t(10'000'000'000ull)))
                continue;
            args.unknown();
        }
        if (opens > 1 && file.isEmpty())
            args.fail("--opens needs --file: a generated trace is made once");
    }
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    const double rssStart = rssMiB();

    QElapsedTimer timer;
    timer.start();
    double openSeconds = -1;  // a file's load (the median of --opens)
    memscope::Result<memscope::gui::RunPtr> run = [&]() -> memscope::Result<memscope::gui::RunPtr> {
        if (!file.isEmpty()) {
            std::vector<double> seconds;
            memscope::Result<memscope::gui::RunPtr> loaded = memscope::makeError("not opened");
            for (uint64_t i = 0; i < opens; ++i) {
                loaded = memscope::makeError("not opened");  // the run before is freed first
                timer.restart();
                loaded = memscope::gui::loadRun(file, memscope::TaskContext{});
                seconds.push_back(double(timer.elapsed()) / 1e3);
                std::printf("loaded %s in %.2f s\n", qPrintable(file), seconds.back());
                if (!loaded.ok()) break;
            }
            std::vector<double> sorted = seconds;
            std::sort(sorted.begin(), sorted.end());
            openSeconds = sorted[sorted.size() / 2];
            if (seconds.size() > 1)
                std::printf("median of %zu opens: %.2f s\n", seconds.size(), openSeconds);
            return loaded;
        }
#ifdef MEMSCOPE_HAVE_TRACE_GENERATOR
        memscope::bench::GeneratorOptions options;
        options.events = events;
        options.devices = 1;  // all events on one timeline: the worst case for drawing
        memscope::Trace trace = memscope::bench::generateTrace(options);
        const char* source = "memscope_trace_generator";
#else
        memscope::Trace trace = generate(events);
        const char* source = "built-in churn generator";
#endif
        std::printf("generated %zu events (%s) in %.2f s\n", trace.events.size(), source,
                    double(timer.elapsed()) / 1e3);
        timer.restart();
        return memscope::gui::makeRun(std::move(trace), QStringLiteral("bench.memscope"));
    }();
    if (!run.ok()) {
        std::fprintf(stderr, "loading failed: %s\n", run.message().c_str());
        return 1;
    }
    std::printf("timeline built in %.2f s\n",
                openSeconds >= 0 ? openSeconds : double(timer.elapsed()) / 1e3);
    {
        const memscope::gui::Run& r = **run;
        const memscope::gui::DeviceRef ref = r.busiestDevice();
        const memscope::DeviceTimeline* tl = r.timeline(ref);
        const memscope::Trace* tr = r.trace(ref);
        if (tl && tr)
            std::printf(
                "busiest device: %zu events in the trace, %zu allocations, %zu live at the peak, "
                "%zu sites\n",
                tr->events.size(), tl->intervals.size(), tl->peak.live_intervals.size(),
                r.allocationIndex(ref) ? r.allocationIndex(ref)->sites.siteCount() : size_t(0));
        const memscope::AllocationIndex* index = r.allocationIndex(ref);
        if (index && index->pyramid)
            std::printf(
                "layout index built in %.3f s (%.1f MiB): %zu columns, %zu segments, bands "
                ">= %llu bytes\n",
                index->pyramid->build_seconds,
                double(index->pyramid->memoryBytes()) / (1024.0 * 1024.0),
                index->pyramid->columns.size(), index->pyramid->segments->size(),
                (unsigned long long)index->pyramid->min_band_bytes);
    }
    const double rssModel = rssMiB();

    // First paint: from "loading complete" (the run handed over) to the first
    // complete frame of the run view.
    timer.restart();
    memscope::gui::RunView view(*run);
    view.resize(1600, 900);
    view.show();
    QCoreApplication::processEvents();
    view.plot()->renderNow();
    view.repaint();
    const double firstPaint = double(timer.nsecsElapsed()) / 1e6;

    // Replots per frame, per plot: more than one per plot means wasted frames.
    int replots = 0;
    QElapsedTimer replotTimer;
    for (QCustomPlot* p : view.findChildren<QCustomPlot*>()) {
        QObject::connect(p, &QCustomPlot::beforeReplot, [&replotTimer] { replotTimer.start(); });
        QObject::connect(p, &QCustomPlot::afterReplot, [&replots, &replotTimer, p] {
            ++replots;
            if (qEnvironmentVariableIsSet("MEMSCOPE_BENCH_TRACE_REPLOTS"))
                std::printf("replot %dx%d %.2f ms\n", p->width(), p->height(),
                            double(replotTimer.nsecsElapsed()) / 1e6);
        });
    }
    if (qEnvironmentVariableIsSet("MEMSCOPE_BENCH_TRACE_REPLOTS"))
        for (QCustomPlot* p : view.findChildren<QCustomPlot*>())
            std::printf("plot %dx%d: %d graphs, %d items, first graph %d points\n", p->width(),
                        p->height(), p->graphCount(), p->itemCount(),
                        p->graphCount() ? p->graph(0)->dataCount() : 0);
    // By category: a snapshot without recorded categories opens by
    // allocation (defaultViewMode), and these rows must be what they say.
    view.setViewMode(memscope::ViewMode::Category);
    view.plot()->renderNow();
    QCoreApplication::processEvents();
    const Frames byCategory = script(view, 100);
    std::printf("replots per frame (all plots of the view): %.2f\n", replots / 100.0);
    const Frames categoryOut = script(view, 100, Script::ZoomedOut);
    const Frames categoryIn = script(view, 100, Script::ZoomedIn);
    // The switch is a frame of its own, with the work it queues (the
    // overview, the legend's new entries), timed apart from the scripts.
    QElapsedTimer switchTimer;
    switchTimer.start();
    view.setViewMode(memscope::ViewMode::Allocation);
    view.plot()->renderNow();
    QCoreApplication::processEvents();
    const double switchMs = double(switchTimer.nsecsElapsed()) / 1e6;
    const Frames byAllocation = script(view, 100);
    const Frames allocationOut = script(view, 100, Script::ZoomedOut);
    const memscope::AllocationLayout& layout = view.plot()->allocationLayout();
    // Segments drawn (a run of columns sharing theirs counts once) and the
    // allocations among them drawn as bands of their own.
    size_t drawnOut = 0, segmentsOut = 0;
    {
        const auto segments = layout.drawnSegments();
        const memscope::LayoutColumn* prev = nullptr;
        for (const memscope::LayoutColumn& col : layout.columns) {
            if (prev && prev->first == col.first && prev->last == col.last) continue;
            prev = &col;
            segmentsOut += col.last - col.first;
            for (uint32_t k = col.first; k < col.last && k < segments.size(); ++k)
                drawnOut += segments[k].interval >= 0 ? 1 : 0;
        }
    }
    const size_t columnsOut = layout.columns.size(), widthOut = layout.column_width,
                 workOut = layout.work;
    const double rasterOut = view.plot()->lastRasterMs();
    // The core layout alone over the whole trace, as the zoomed-out view asks for it.
    double layoutAloneMs = 0;
    {
        const memscope::DeviceTimeline* tl = view.plot()->timeline();
        const memscope::AllocationIndex* index = (*run)->allocationIndex(view.device());
        if (tl && index) {
            memscope::LayoutRequest lr;
            lr.lo = tl->start;
            lr.hi = tl->end + 1;
            lr.columns = columnsOut;
            lr.min_band_bytes = uint64_t(std::max<int64_t>(1, tl->peak.bytes / 700));
            std::vector<double> ms;
            for (int i = 0; i < 20; ++i) {
                QElapsedTimer t;
                t.start();
                const memscope::AllocationLayout l = memscope::layoutAllocations(*tl, *index, lr);
                ms.push_back(double(t.nsecsElapsed()) / 1e6);
                if (l.columns.empty()) break;
            }
            std::sort(ms.begin(), ms.end());
            layoutAloneMs = ms[ms.size() / 2];
        }
    }
    // The core layout alone for a jump to 0.5 % of the trace (what the
    // zoomed-in script's first frames sweep), at 40 places.
    double jumpMedian = 0, jumpWorst = 0;
    size_t jumpColumns = 0;
    {
        const memscope::DeviceTimeline* tl = view.plot()->timeline();
        const memscope::AllocationIndex* index = (*run)->allocationIndex(view.device());
        if (tl && index && tl->end > tl->start) {
            std::mt19937 rng(11);
            std::vector<double> ms;
            const double full = double(tl->end - tl->start);
            for (int i = 0; i < 40; ++i) {
                const double c = double(tl->start) +
                                 full * std::uniform_real_distribution<double>(0.05, 0.95)(rng);
                memscope::LayoutRequest lr;
                lr.lo = int64_t(c - full * 0.0025);
                lr.hi = int64_t(c + full * 0.0025) + 1;
                lr.columns = columnsOut;
                lr.min_band_bytes = memscope::bandBytesForRow(double(tl->peak.bytes) / 700);
                lr.grid = true;
                QElapsedTimer t;
                t.start();
                const memscope::AllocationLayout l = memscope::layoutAllocations(*tl, *index, lr);
                ms.push_back(double(t.nsecsElapsed()) / 1e6);
                jumpColumns += l.columns.size();
            }
            std::sort(ms.begin(), ms.end());
            jumpMedian = ms[ms.size() / 2];
            jumpWorst = ms.back();
            jumpColumns /= ms.size();
        }
    }
    const Frames allocationIn = script(view, 100, Script::ZoomedIn);
    const double rssGui = rssMiB();

    // Hover: the hit test and the text for 200 points across the plot, by
    // allocation, zoomed out (what a mouse move costs before any repaint).
    view.zoom()->reset();
    view.plot()->renderNow();
    std::vector<double> hoverMs;
    {
        std::mt19937 rng(7);
        const QRect area = view.plot()->rect();
        size_t answered = 0;
        for (int i = 0; i < 200; ++i) {
            const QPoint pixel(int(rng() % uint32_t(std::max(1, area.width()))),
                               int(rng() % uint32_t(std::max(1, area.height()))));
            const QPointF at = view.plot()->pixelToCoord(pixel);
            QElapsedTimer t;
            t.start();
            const QString text = view.plot()->hoverTextAt(at.x(), at.y());
            hoverMs.push_back(double(t.nsecsElapsed()) / 1e6);
            answered += text.isEmpty() ? 0 : 1;
        }
        std::sort(hoverMs.begin(), hoverMs.end());
        std::printf(
            "hover, by allocation, 200 points (%zu over an allocation): median %.2f ms, "
            "worst %.2f ms\n",
            answered, hoverMs[hoverMs.size() / 2], hoverMs.back());
    }

    // The phase strip alone, zoomed out over the whole run: its cost follows
    // the pixels, not the phases (a search over ends steps over what a
    // painted pixel already shows).
    double stripMs = 0;
    size_t stripPhases = 0;
    if (const auto bands = (*run)->phaseBands(view.device())) {
        stripPhases = bands->itemCount();
        QImage strip(1600, 52, QImage::Format_ARGB32_Premultiplied);
        std::vector<double> ms;
        for (int i = 0; i < 20; ++i) {
            QPainter painter(&strip);
            QElapsedTimer t;
            t.start();
            memscope::gui::paintPhaseBands(painter, QRectF(0, 0, 1600, 52), *bands,
                                           view.plot()->axisMap(), view.zoom()->begin(),
                                           view.zoom()->end(), view.palette());
            ms.push_back(double(t.nsecsElapsed()) / 1e6);
        }
        std::sort(ms.begin(), ms.end());
        stripMs = ms[ms.size() / 2];
    }

    const double core = rssModel - rssStart, gui = rssGui - rssModel;
    std::printf("first paint after load: %.1f ms (target <= 100 ms)\n", firstPaint);
    std::printf("frame times of 100 steps, ms (target: median and worst <= 16 ms):\n");
    std::printf("  %-10s %-12s %8s %8s %8s %10s %8s %10s %8s %9s %10s\n", "script", "mode",
                "median", "worst", "mean", "reduction", "raster", "plot drawn", "faults",
                "worst at", "its faults");
    auto row = [](const char* scriptName, const char* mode, const Frames& f) {
        std::printf("  %-10s %-12s %8.2f %8.2f %8.2f %10.2f %8.2f %10.2f %8.0f %9d %10ld\n",
                    scriptName, mode, f.median, f.worst, f.mean, f.build, f.raster, f.plot,
                    f.faults, f.worstStep, f.worstFaults);
    };
    row("mixed", "category", byCategory);
    row("mixed", "allocation", byAllocation);
    row("zoomed out", "category", categoryOut);
    row("zoomed out", "allocation", allocationOut);
    row("zoomed in", "category", categoryIn);
    row("zoomed in", "allocation", allocationIn);
    std::printf(
        "by allocation, zoomed out: %zu columns (%zu px each), %zu segments, %zu allocations "
        "drawn as bands of their own, %zu allocations visited, raster %.2f ms\n",
        columnsOut, widthOut, segmentsOut, drawnOut, workOut, rasterOut);
    std::printf("switch from by category to by allocation: %.2f ms\n", switchMs);
    std::printf(
        "by allocation, zoomed in: %d of %d frames swept below the pyramid took columns over "
        "from the frame before (pans), %.0f%% of their columns on average\n",
        allocationIn.panFrames, allocationIn.sweptFrames,
        allocationIn.panFrames ? 100.0 * allocationIn.takenOver / allocationIn.panFrames : 0.0);
    std::printf("core layout alone over the whole trace: %.2f ms (median of 20)\n", layoutAloneMs);
    std::printf(
        "core layout alone, a jump to 0.5%% of the trace (40 places, %zu columns): median %.2f "
        "ms, worst %.2f ms\n",
        jumpColumns, jumpMedian, jumpWorst);
    std::printf("phase strip alone, zoomed out, 1600 px: %zu phases, %.2f ms (median of 20)\n",
                stripPhases, stripMs);
    std::printf("memory: core model %.0f MiB, GUI on top %.0f MiB (%.2fx, target <= 1x)\n", core,
                gui, core > 0 ? gui / core : 0.0);
    std::printf("malloc: %s\n", memscope::bench::mallocMode());
    const double peak = peakRssMiB();
    if (!file.isEmpty()) {
        const double fileMiB = double(QFileInfo(file).size()) / (1024.0 * 1024.0);
        std::printf(
            "peak resident memory of the whole process: %.0f MiB for a %.0f MiB file "
            "(%.2fx, target <= 1.5x)\n",
            peak, fileMiB, fileMiB > 0 ? peak / fileMiB : 0.0);
    } else {
        std::printf("peak resident memory of the whole process: %.0f MiB\n", peak);
    }
    return 0;
}
