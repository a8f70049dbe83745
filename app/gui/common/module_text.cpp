#include "common/module_text.h"

#include <QStringList>

#include "common/format.h"

namespace memscope::gui {

QString noModulesMessage() {
    return QStringLiteral(
        "no modules in this trace: record with memscope-cli record, or a snapshot with Python "
        "frames");
}

QString moduleSourceSuffix(ModuleSource source) {
    return source == ModuleSource::Inferred ? QStringLiteral(" (inferred)") : QString();
}

QString allocationModuleText(const Trace& trace, const ModuleAttribution& attribution,
                             const AllocationInterval& a) {
    if (attribution.source() == ModuleSource::None || attribution.empty()) return {};
    const ModuleHit hit = moduleOfInterval(attribution, a);
    if (hit.module.isNull()) return toQString(kOutsideModulesLabel);
    QStringList notes;
    // Forward is the plain case; recompute and backward say which pass made it.
    if (hit.kind != ModuleScopeKind::Forward) notes << toQString(toString(hit.kind));
    if (attribution.source() == ModuleSource::Inferred) notes << QStringLiteral("inferred");
    QString text = toQString(modulePath(trace, hit.module));
    if (!notes.isEmpty()) text += QStringLiteral(" (%1)").arg(notes.join(QStringLiteral(", ")));
    return text;
}

}  // namespace memscope::gui
