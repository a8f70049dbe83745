#include "window/app_options.h"

#include <QCommandLineParser>

#include "memscope/analysis/compare_table.h"

namespace memscope::gui {

QStringList compareTabNames() {
    return {QStringLiteral("summary"),     QStringLiteral("composition"),
            QStringLiteral("policy-map"),  QStringLiteral("theory"),
            QStringLiteral("difference"),  QStringLiteral("modules"),
            QStringLiteral("allocations"), QStringLiteral("lines")};
}

QStringList dockNames() {
    return {QStringLiteral("inspector"), QStringLiteral("search"), QStringLiteral("modules"),
            QStringLiteral("allocator"), QStringLiteral("flame"),  QStringLiteral("leaks"),
            QStringLiteral("lines")};
}

AppOptions parseOptions(const QStringList& arguments) {
    QCommandLineParser parser;
    parser.setApplicationDescription(
        QStringLiteral("memscope: memory timelines of deep-learning training"));
    parser.addHelpOption();
    parser.addVersionOption();
    const QCommandLineOption compare(
        QStringLiteral("compare"),
        QStringLiteral("Open the files side by side in the compare view."));
    const QCommandLineOption screenshot(
        QStringLiteral("screenshot"),
        QStringLiteral("Render offscreen to FILE (.png/.svg/.pdf) and exit."),
        QStringLiteral("FILE"));
    const QCommandLineOption size(QStringLiteral("size"),
                                  QStringLiteral("Screenshot size, WxH (default 1600x1000)."),
                                  QStringLiteral("WxH"));
    const QCommandLineOption dark(
        QStringLiteral("dark"),
        QStringLiteral("Use a dark palette (the system palette is followed otherwise)."));
    const QCommandLineOption colorBy(
        QStringLiteral("color-by"),
        QStringLiteral("Screenshot: stack and colour by 'category', 'allocation' or 'module' "
                       "(default: category where the trace recorded categories, else "
                       "allocation)."),
        QStringLiteral("MODE"));
    const QCommandLineOption align(
        QStringLiteral("align"),
        QStringLiteral("Screenshot with --compare: line runs up by 'time', 'step' or 'phase' "
                       "(the steps and phases recorded or inferred; default: time)."),
        QStringLiteral("MODE"));
    const QCommandLineOption tab(
        QStringLiteral("compare-tab"),
        QStringLiteral("Screenshot with --compare: the table's tab to show: 'summary', "
                       "'composition', 'policy-map', 'theory', 'difference', 'modules', "
                       "'allocations' (by site, the allocations alive at the peaks that the "
                       "baseline run has and another lacks, and back; the largest group "
                       "highlighted in both plots) or 'lines' (bytes at each peak by source "
                       "line, the runs side by side) (default: summary)."),
        QStringLiteral("TAB"));
    const QCommandLineOption whatif(
        QStringLiteral("whatif"),
        QStringLiteral("Predict other checkpointing policies from the first file (a run saving "
                       "every activation) and compare them with it: POLICY[,POLICY...] "
                       "(e.g. block,sqrt,layers:0,2), or 'default' for every policy its layers "
                       "allow."),
        QStringLiteral("POLICIES"));
    const QCommandLineOption dock(
        QStringLiteral("dock"),
        QStringLiteral("Screenshot of one run: the dock to show: 'inspector', 'search', "
                       "'modules', 'allocator', 'flame' (the stacks alive at the peak, its "
                       "largest innermost frame highlighted), 'leaks' (what grows per step, "
                       "its first group highlighted) or 'lines' (bytes at the peak by source "
                       "line, the largest line highlighted)."),
        QStringLiteral("DOCK"));
    const QCommandLineOption wholeRun(
        QStringLiteral("whole-run"),
        QStringLiteral("Screenshot of one run: show the whole run (its forward, backward and "
                       "optimizer) instead of zooming to its peak."));
    const QCommandLineOption follow(
        QStringLiteral("follow"),
        QStringLiteral("Follow a trace still being written (by memscope-cli record or an "
                       "attach window): the run view updates as chunks arrive. Repeatable."),
        QStringLiteral("PATH"));
    parser.addOptions(
        {compare, screenshot, size, dark, colorBy, align, tab, whatif, dock, wholeRun, follow});
    parser.addPositionalArgument(QStringLiteral("files"),
                                 QStringLiteral("Traces or folders of per-rank traces."),
                                 QStringLiteral("[FILES...]"));
    AppOptions o;
    if (!parser.parse(arguments)) {
        o.error = parser.errorText();
        return o;
    }
    if (parser.isSet(QStringLiteral("help"))) parser.showHelp(0);
    if (parser.isSet(QStringLiteral("version"))) parser.showVersion();
    o.paths = parser.positionalArguments();
    o.compare = parser.isSet(compare);
    o.follow = parser.values(follow);
    o.dark = parser.isSet(dark);
    o.screenshot = parser.value(screenshot);
    if (parser.isSet(size)) {
        const QStringList wh = parser.value(size).split(QLatin1Char('x'));
        if (wh.size() == 2 && wh[0].toInt() > 100 && wh[1].toInt() > 100)
            o.size = QSize(wh[0].toInt(), wh[1].toInt());
        else
            o.error = QStringLiteral("--size wants WxH, e.g. 1600x1000");
    }
    if (parser.isSet(colorBy)) {
        o.color_by = viewModeFromString(parser.value(colorBy).toStdString());
        if (!o.color_by)
            o.error =
                QStringLiteral("--color-by wants 'category', 'allocation' or 'module', not '%1'")
                    .arg(parser.value(colorBy));
        else if (o.screenshot.isEmpty())
            o.error = QStringLiteral("--color-by applies to --screenshot");
    }
    if (parser.isSet(whatif)) {
        const QString text = parser.value(whatif);
        if (text == QLatin1String("default")) {
            o.whatif.emplace();
        } else {
            const std::vector<std::string> words{text.toStdString()};
            auto policies = parseWhatIfPolicies(words);
            if (policies.ok() && policies->empty())
                o.error = QStringLiteral("--whatif wants POLICY[,POLICY...] or 'default'");
            else if (policies.ok())
                o.whatif = std::move(*policies);
            else
                o.error =
                    QStringLiteral("--whatif: %1").arg(QString::fromStdString(policies.message()));
        }
        if (o.paths.isEmpty()) o.error = QStringLiteral("--whatif needs a file to predict from");
    }
    // The compare view is shown with --compare, and with --whatif's predictions.
    const bool comparing = o.compare || o.whatif.has_value();
    if (parser.isSet(align)) {
        o.align = alignModeFromString(parser.value(align).toStdString());
        if (!o.align)
            o.error = QStringLiteral("--align wants 'time', 'step' or 'phase', not '%1'")
                          .arg(parser.value(align));
        else if (o.screenshot.isEmpty() || !comparing)
            o.error = QStringLiteral("--align applies to --screenshot with --compare or --whatif");
    }
    if (parser.isSet(tab)) {
        o.compare_tab = parser.value(tab);
        const QStringList kTabs = compareTabNames();
        if (!kTabs.contains(o.compare_tab))
            o.error = QStringLiteral("--compare-tab wants one of %1, not '%2'")
                          .arg(kTabs.join(QStringLiteral(", ")), o.compare_tab);
        else if (o.screenshot.isEmpty() || !comparing)
            o.error =
                QStringLiteral("--compare-tab applies to --screenshot with --compare or --whatif");
    }
    o.whole_run = parser.isSet(wholeRun);
    if (o.whole_run && (o.screenshot.isEmpty() || comparing))
        o.error = QStringLiteral("--whole-run applies to --screenshot of one run");
    if (parser.isSet(dock)) {
        o.dock = parser.value(dock);
        if (!dockNames().contains(o.dock))
            o.error = QStringLiteral("--dock wants one of %1, not '%2'")
                          .arg(dockNames().join(QStringLiteral(", ")), o.dock);
        else if (o.screenshot.isEmpty() || comparing)
            o.error = QStringLiteral("--dock applies to --screenshot of one run");
    }
    if (!o.follow.isEmpty() && !o.screenshot.isEmpty())
        o.error = QStringLiteral("--follow does not go with --screenshot");
    if (!o.screenshot.isEmpty() && o.paths.isEmpty())
        o.error = QStringLiteral("--screenshot needs at least one file");
    return o;
}

}  // namespace memscope::gui
