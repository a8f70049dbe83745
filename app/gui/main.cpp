// memscope: the Qt GUI. Parses the command line and either opens the main
// window or renders a screenshot offscreen and exits.
#include <QApplication>
#include <QIcon>
#include <cstdio>
#include <cstring>

#include "common/plot_style.h"
#include "memscope/base/huge_page_malloc.h"
#include "window/app_options.h"
#include "window/main_window.h"
#include "window/screenshot.h"

int main(int argc, char** argv) {
    // Large loads in huge pages; executes this program again (huge_page_malloc.h).
    memscope::useHugePageMalloc(argv);
    // --screenshot, --help and --version must work without a display (CI, the
    // README's main job on a headless machine).
    bool headless = false;
    for (int i = 1; i < argc; ++i)
        for (const char* opt : {"--screenshot", "--help", "-h", "--version", "-v"})
            if (std::strcmp(argv[i], opt) == 0) headless = true;
    const bool noDisplay =
        qEnvironmentVariableIsEmpty("DISPLAY") && qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY");
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM") && noDisplay) {
        if (!headless) {
            std::fprintf(
                stderr,
                "memscope: no display. Use `memscope --screenshot OUT.png [--compare] FILES...`, "
                "run under xvfb-run, or try memscope-cli.\n");
            return 1;
        }
        qputenv("QT_QPA_PLATFORM", "offscreen");
    }
    QApplication app(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("memscope"));
    QApplication::setApplicationName(QStringLiteral("memscope"));
    QApplication::setApplicationVersion(QStringLiteral(MEMSCOPE_VERSION));
    QApplication::setWindowIcon(QIcon(QStringLiteral(":/icons/memscope.svg")));

    const memscope::gui::AppOptions options =
        memscope::gui::parseOptions(QApplication::arguments());
    if (!options.error.isEmpty()) {
        std::fprintf(stderr, "memscope: %s (see memscope --help)\n", qPrintable(options.error));
        return 2;
    }
    if (options.dark) {
        QApplication::setStyle(QStringLiteral("Fusion"));
        QApplication::setPalette(memscope::gui::darkPalette());
    }
    if (!options.screenshot.isEmpty()) return memscope::gui::runScreenshot(options);

    memscope::gui::MainWindow window;
    window.show();
    if (options.whatif) window.whatIfAfterLoad(*options.whatif);
    window.openPaths(options.paths, options.compare);
    for (const QString& path : options.follow) window.followPath(path);
    return app.exec();
}
