#pragma once
// One colour per category and for the by-allocation bands, readable on light
// and dark palettes alike (checked against the window colour's lightness).

#include <QColor>
#include <QPalette>
#include <cstdint>

#include "memscope/model/types.h"

namespace memscope::gui {

QColor categoryColor(Category c);
QString categoryLabel(Category c);  // "optimizer state"
// A distinct colour for band i.
QColor bandColor(int i);
// The by-allocation view's colour of an allocation site, from its label's hash
// (AllocationSites), so a site keeps its colour across runs and sessions.
QColor siteColor(uint64_t siteHash);
QColor reservedColor(const QPalette& palette);
bool isDarkPalette(const QPalette& palette);

}  // namespace memscope::gui
