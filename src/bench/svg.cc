#include "bench/svg.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "bench/histogram.h"
#include "common/strings.h"

namespace tg::bench {
namespace {

constexpr double kW = 640, kH = 320, kLeft = 70, kRight = 150, kTop = 30, kBottom = 50;
const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                         "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"};

std::string Num(double v) {
  if (v == 0) return "0";
  double a = std::fabs(v);
  if (a >= 1e6 || a < 1e-3) return fmt::format("{:.2e}", v);
  return fmt::format("{:.4g}", v);
}

}  // namespace

std::string HtmlEscape(const std::string& s) { return common::XmlEscape(s); }

namespace {

// One series of LinePlot at legend position `i`: its line (a step line with spec.steps), markers
// for a short series, its legend entry. `px`/`py` map data to plot coordinates.
template <typename Px, typename Py>
std::string SeriesSvg(const PlotSpec& spec, const Series& s, std::size_t i, Px px, Py py) {
  std::string out;
  const char* color = kColors[i % std::size(kColors)];
  std::string pts;
  double prev_y = 0;
  bool first = true;
  for (auto [x, y] : s.xy) {
    if (!std::isfinite(x) || !std::isfinite(y)) continue;
    if (spec.steps && !first) pts += fmt::format("{:.1f},{:.1f} ", px(x), py(prev_y));
    pts += fmt::format("{:.1f},{:.1f} ", px(x), py(y));
    prev_y = y;
    first = false;
  }
  out += fmt::format(
      "<polyline class=\"series\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\" "
      "points=\"{}\"/>",
      color, pts);
  // A line needs two points: a sweep's few points are also drawn as markers, so one point
  // shows.
  if (s.xy.size() <= 32) {
    for (auto [x, y] : s.xy) {
      if (!std::isfinite(x) || !std::isfinite(y)) continue;
      out +=
          fmt::format("<circle class=\"point\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"/>",
                      px(x), py(y), color);
    }
  }
  out += fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"10\" height=\"10\" fill=\"{}\"/>"
      "<text x=\"{}\" y=\"{}\" class=\"a\">{}</text>",
      kW - kRight + 10, kTop + 16 * i, color, kW - kRight + 24, kTop + 16 * i + 9,
      HtmlEscape(s.name));
  return out;
}

}  // namespace

std::string LinePlot(const PlotSpec& spec, const std::vector<Series>& series) {
  double x0 = 1e300, x1 = -1e300, y0 = 0, y1 = -1e300;
  auto tx = [&](double x) { return spec.log_x ? std::log10(std::max(x, 1e-9)) : x; };
  for (const auto& s : series) {
    for (auto [x, y] : s.xy) {
      if (!std::isfinite(x) || !std::isfinite(y)) continue;
      x0 = std::min(x0, tx(x));
      x1 = std::max(x1, tx(x));
      y1 = std::max(y1, y);
    }
  }
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"plot\" width=\"{}\" height=\"{}\" "
      "viewBox=\"0 0 {} {}\" role=\"img\"><title>{}</title>"
      "<text x=\"{}\" y=\"18\" class=\"t\">{}</text>",
      kW, kH, kW, kH, HtmlEscape(spec.title), kLeft, HtmlEscape(spec.title));
  if (x1 < x0) return svg + "<text x=\"250\" y=\"160\">no data</text></svg>";
  if (x1 == x0) {  // one point (a single-point sweep): centre it
    x0 -= 0.5;
    x1 += 0.5;
  }
  if (y1 <= y0) y1 = y0 + 1;
  double pw = kW - kLeft - kRight, ph = kH - kTop - kBottom;
  auto px = [&](double x) { return kLeft + (tx(x) - x0) / (x1 - x0) * pw; };
  auto py = [&](double y) { return kTop + ph - (y - y0) / (y1 - y0) * ph; };
  svg += fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#999\"/>", kLeft,
      kTop, pw, ph);
  for (int i = 0; i <= 4; ++i) {
    double y = y0 + (y1 - y0) * i / 4;
    svg += fmt::format("<text x=\"{}\" y=\"{}\" class=\"a\" text-anchor=\"end\">{}</text>",
                       kLeft - 4, py(y) + 4, Num(y));
  }
  if (!spec.x_ticks.empty()) {
    for (std::size_t i = 0; i < spec.x_ticks.size(); ++i) {
      svg += fmt::format("<text x=\"{}\" y=\"{}\" class=\"a\" text-anchor=\"middle\">{}</text>",
                         px(static_cast<double>(i)), kTop + ph + 14, HtmlEscape(spec.x_ticks[i]));
    }
  } else {
    for (int i = 0; i <= 4; ++i) {
      double xv = x0 + (x1 - x0) * i / 4;
      double label = spec.log_x ? std::pow(10, xv) : xv;
      svg += fmt::format("<text x=\"{}\" y=\"{}\" class=\"a\" text-anchor=\"middle\">{}</text>",
                         kLeft + pw * i / 4, kTop + ph + 14, Num(label));
    }
  }
  svg += fmt::format("<text x=\"{}\" y=\"{}\" class=\"a\" text-anchor=\"middle\">{}</text>",
                     kLeft + pw / 2, kH - 8, HtmlEscape(spec.x_label));
  svg += fmt::format(
      "<text x=\"12\" y=\"{}\" class=\"a\" transform=\"rotate(-90 12 {})\" "
      "text-anchor=\"middle\">{}</text>",
      kTop + ph / 2, kTop + ph / 2, HtmlEscape(spec.y_label));
  for (std::size_t i = 0; i < series.size(); ++i) svg += SeriesSvg(spec, series[i], i, px, py);
  return svg + "</svg>";
}

Series CdfSeries(const std::string& name, const Histogram& h) {
  Series s{name, {}};
  if (h.count() == 0) return s;
  double seen = 0, n = static_cast<double>(h.count());
  for (std::size_t i = 0; i < h.bucket_count(); ++i) {
    if (h.count_at_index(i) == 0) continue;
    seen += static_cast<double>(h.count_at_index(i));
    s.xy.emplace_back(static_cast<double>(h.HighestEquivalent(h.ValueAtIndex(i))) / 1000.0,
                      seen / n);
  }
  return s;
}

std::string HtmlHead(const std::string& title) {
  return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" +
         HtmlEscape(title) +
         "</title><style>body{font-family:sans-serif;margin:20px;color:#222}"
         "table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ccc;padding:3px 8px;"
         "font-size:13px;text-align:right}th{background:#eee}td.l{text-align:left}"
         ".fail{color:#b00;font-weight:bold}.pass{color:#070;font-weight:bold}"
         ".t{font-size:14px;font-weight:bold}.a{font-size:11px}svg.plot{margin:6px 0}</style>"
         "</head><body>\n<h1>" +
         HtmlEscape(title) + "</h1>\n";
}

std::string HtmlTail() { return "</body></html>\n"; }

}  // namespace tg::bench
