#pragma once
// One colour per category and for the by-allocation bands, readable on light
// and dark palettes alike (checked against the window colour's lightness).

#include <QColor>
#include <QPalette>

#include "memscope/types.h"

namespace memscope::gui {

QColor categoryColor(Category c);
QString categoryLabel(Category c);  // "optimizer state"
// A distinct colour for band i of the by-allocation view.
QColor bandColor(int i);
QColor reservedColor(const QPalette& palette);
bool isDarkPalette(const QPalette& palette);

}  // namespace memscope::gui
