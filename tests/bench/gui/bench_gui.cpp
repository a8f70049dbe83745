// memscope-bench-gui [EVENTS]: loads a generated trace (10 million events by
// default), opens a run view offscreen and prints:
//   - first paint after loading completes (target <= 1 s),
//   - median and worst frame time of 100 scripted zoom/pan steps, by category
//     and by allocation (target <= 16 ms),
//   - the GUI's memory on top of core's model (target <= 1x).
// Run with QT_QPA_PLATFORM=offscreen (set here when unset).
#include <QApplication>
#include <QElapsedTimer>
#include <qcustomplot.h>
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "run_loader.h"
#include "run_view.h"
#include "timeline_plot.h"
#include "zoom_state.h"

#ifdef MEMSCOPE_HAVE_TRACE_GENERATOR
#include "trace_generator.h"
#endif

namespace {

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
    double plot = 0;   // mean ms until the timeline plot is drawn (the rest: overview, window paint)
};

Frames script(memscope::gui::RunView& view, int steps) {
    using memscope::gui::ZoomState;
    ZoomState* z = view.zoom();
    z->reset();
    std::mt19937 rng(7);
    std::vector<double> ms;
    double build = 0, plotMs = 0;
    for (int i = 0; i < steps; ++i) {
        const double w = z->end() - z->begin();
        const double c = z->begin() + w * std::uniform_real_distribution<double>(0.2, 0.8)(rng);
        QElapsedTimer t;
        t.start();
        switch (i % 5) {
        case 0:
        case 1: z->zoomBy(0.6, c); break;          // zoom in
        case 2: z->panBy(i % 2 ? 0.3 : -0.3); break;  // pan
        case 3: z->zoomBy(1.4, c); break;            // zoom out
        case 4: if (i % 20 == 4) z->reset(); else z->panBy(-0.15); break;
        }
        view.plot()->renderNow();        // rebuild from levelOfDetail + immediate replot
        plotMs += double(t.nsecsElapsed()) / 1e6 / steps;
        QCoreApplication::processEvents();  // overview brush, queued paints
        ms.push_back(double(t.nsecsElapsed()) / 1e6);
        build += view.plot()->lastBuildMs() / steps;
    }
    std::vector<double> s = ms;
    std::sort(s.begin(), s.end());
    Frames f;
    f.median = s[s.size() / 2];
    f.worst = s.back();
    for (double v : s) f.mean += v / double(s.size());
    f.build = build;
    f.plot = plotMs;
    return f;
}

}  // namespace

int main(int argc, char** argv) {
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    const uint64_t events = argc > 1 ? std::stoull(argv[1]) : 10'000'000ull;
    const double rssStart = rssMiB();

    QElapsedTimer timer;
    timer.start();
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
    std::printf("generated %zu events (%s) in %.2f s\n", trace.events.size(), source, double(timer.elapsed()) / 1e3);

    timer.restart();
    auto run = memscope::gui::makeRun(std::move(trace), QStringLiteral("bench.memscope"));
    if (!run.ok()) {
        std::fprintf(stderr, "timeline failed: %s\n", run.message().c_str());
        return 1;
    }
    std::printf("timeline built in %.2f s\n", double(timer.elapsed()) / 1e3);
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
                std::printf("replot %dx%d %.2f ms\n", p->width(), p->height(), double(replotTimer.nsecsElapsed()) / 1e6);
        });
    }
    if (qEnvironmentVariableIsSet("MEMSCOPE_BENCH_TRACE_REPLOTS"))
        for (QCustomPlot* p : view.findChildren<QCustomPlot*>())
            std::printf("plot %dx%d: %d graphs, %d items, first graph %d points\n", p->width(), p->height(), p->graphCount(),
                        p->itemCount(), p->graphCount() ? p->graph(0)->dataCount() : 0);
    const Frames byCategory = script(view, 100);
    std::printf("replots per frame (all plots of the view): %.2f\n", replots / 100.0);
    view.setStackMode(memscope::StackMode::ByAllocation);
    const Frames byAllocation = script(view, 100);
    const double rssGui = rssMiB();

    const double core = rssModel - rssStart, gui = rssGui - rssModel;
    std::printf("first paint after load: %.1f ms (target <= 1000 ms)\n", firstPaint);
    std::printf("100 zoom/pan steps, by category:   median %.2f ms, worst %.2f ms, mean %.2f ms, of which reduction %.2f ms, plot drawn %.2f ms (target <= 16 ms)\n",
                byCategory.median, byCategory.worst, byCategory.mean, byCategory.build, byCategory.plot);
    std::printf("100 zoom/pan steps, by allocation: median %.2f ms, worst %.2f ms, mean %.2f ms, of which reduction %.2f ms, plot drawn %.2f ms (target <= 16 ms)\n",
                byAllocation.median, byAllocation.worst, byAllocation.mean, byAllocation.build, byAllocation.plot);
    std::printf("memory: core model %.0f MiB, GUI on top %.0f MiB (%.2fx, target <= 1x)\n", core, gui,
                core > 0 ? gui / core : 0.0);
    return 0;
}
