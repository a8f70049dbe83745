#include "common/category_colors.h"

#include <array>

namespace memscope::gui {

QColor categoryColor(Category c) {
    // Mid-lightness hues: the same set works on light and dark backgrounds.
    static const std::array<QColor, kCategoryCount> colors = {
        QColor(0x4e, 0x79, 0xa7),  // parameter
        QColor(0xf2, 0x8e, 0x2b),  // optimizer state
        QColor(0x76, 0xb7, 0xb2),  // input
        QColor(0xed, 0xc9, 0x48),  // temporary
        QColor(0xe1, 0x57, 0x59),  // activation
        QColor(0x59, 0xa1, 0x4f),  // gradient
        QColor(0xb0, 0x7a, 0xa1),  // autograd detail
        QColor(0x9c, 0x9c, 0x9c),  // unknown
    };
    return colors[size_t(index(c))];
}

QString categoryLabel(Category c) {
    switch (c) {
        case Category::Parameter:
            return QStringLiteral("parameter");
        case Category::OptimizerState:
            return QStringLiteral("optimizer state");
        case Category::Input:
            return QStringLiteral("input");
        case Category::Temporary:
            return QStringLiteral("temporary");
        case Category::Activation:
            return QStringLiteral("activation");
        case Category::Gradient:
            return QStringLiteral("gradient");
        case Category::AutogradDetail:
            return QStringLiteral("autograd detail");
        case Category::Unknown:
            return QStringLiteral("unknown");
    }
    return QStringLiteral("unknown");
}

QColor bandColor(int i) {
    // Golden-angle hue steps keep neighbouring bands apart.
    return QColor::fromHsv((i * 137) % 360, 150, 215);
}

QColor siteColor(uint64_t siteHash) {
    // Tableau 20: distinct mid-lightness hues, readable on light and dark
    // windows; the hash's high bits pick one (the low ones vary least).
    static const std::array<QRgb, 20> palette = {0x4e79a7, 0xa0cbe8, 0xf28e2b, 0xffbe7d, 0x59a14f,
                                                 0x8cd17d, 0xb6992d, 0xf1ce63, 0x499894, 0x86bcb6,
                                                 0xe15759, 0xff9d9a, 0x79706e, 0xbab0ac, 0xd37295,
                                                 0xfabfd2, 0xb07aa1, 0xd4a6c8, 0x9d7660, 0xd7b5a6};
    return QColor(palette[size_t((siteHash >> 33) % palette.size())]);
}

bool isDarkPalette(const QPalette& palette) {
    return palette.color(QPalette::Window).lightness() < 128;
}

QColor reservedColor(const QPalette& palette) {
    return isDarkPalette(palette) ? QColor(0xf0, 0xf0, 0xf0) : QColor(0x20, 0x20, 0x20);
}

}  // namespace memscope::gui
