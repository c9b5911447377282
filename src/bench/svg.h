// Minimal inline-SVG line plots for the self-contained HTML reports (no scripts, no external
// assets). Pure functions; thread-safe.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "bench/histogram.h"

namespace tg::bench {

struct Series {
  std::string name;
  std::vector<std::pair<double, double>> xy;
};

struct PlotSpec {
  std::string title, x_label, y_label;
  bool log_x = false;
  std::vector<std::string> x_ticks;  // when set, x is an index 0..n-1 labelled with these
  bool steps = false;                // draw as a step function (CDFs)
};

// An <svg> element (640x320) with axes, tick labels, one polyline per series (with a marker per
// point for series of at most 32 points, so a single-point sweep shows) and a legend; an
// empty plot says "no data" instead of drawing nothing.
std::string LinePlot(const PlotSpec& spec, const std::vector<Series>& series);

// Escapes &, <, >, " for HTML text and attributes.
std::string HtmlEscape(const std::string& s);

// The points of a latency CDF (x in ms, y in 0..1) from a histogram's JSON buckets.
Series CdfSeries(const std::string& name, const Histogram& h);

// Shared page chrome: <!DOCTYPE html> ... <style> ... <body> and the closing tags.
std::string HtmlHead(const std::string& title);
std::string HtmlTail();

}  // namespace tg::bench
