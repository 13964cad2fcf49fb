// The frontier benchmark's report: a table per service, the goal check, and the chart.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>

#include <unistd.h>

#include "bench/frontier/frontier_points.h"

namespace gleaner::bench::frontier {
namespace {

constexpr Family kFamilies[] = {Family::kAlone,          Family::kKubelet,
                                Family::kKoordletStyle,  Family::kGleanerAlways,
                                Family::kGleanerShipped, Family::kGleanerSlo};

// LS-alone p99 of `mix` (the denominator of every ratio on that node); 0 when absent.
double alone_p99(const std::vector<Point>& points, BeMix mix) {
  for (const auto& p : points)
    if (p.mix == mix && p.family == Family::kAlone) return p.p99_ms;
  return 0;
}

double ratio(const Point& p, double alone) {
  return alone > 0 ? p.p99_ms / alone : 0;
}

std::vector<BeMix> mixes_of(const std::vector<Point>& points) {
  std::vector<BeMix> out;
  for (const auto& p : points)
    if (std::find(out.begin(), out.end(), p.mix) == out.end()) out.push_back(p.mix);
  return out;
}

// Points of `others` that `family` does not match: no point of `family` harvests at least as
// much (within 0.02 of the idle CPU) with a p99 ratio no worse (within 5%).
std::vector<const Point*> not_matched(const std::vector<Point>& points, BeMix mix, Family family,
                                      std::initializer_list<Family> others) {
  const double alone = alone_p99(points, mix);
  std::vector<const Point*> misses;
  for (const auto& c : points) {
    if (c.mix != mix || std::find(others.begin(), others.end(), c.family) == others.end()) continue;
    bool matched = false;
    for (const auto& g : points) {
      if (g.mix != mix || g.family != family) continue;
      if (g.be_share_of_idle >= c.be_share_of_idle - 0.02 &&
          ratio(g, alone) <= ratio(c, alone) * 1.05) {
        matched = true;
      }
    }
    if (!matched) misses.push_back(&c);
  }
  return misses;
}

// `text` as a single-quoted gnuplot string (a quote inside is written twice).
std::string quoted(const std::string& text) {
  std::string out = "'";
  for (char c : text) {
    out += c;
    if (c == '\'') out += '\'';
  }
  return out + "'";
}

}  // namespace

void print_table(ServiceKind kind, const std::vector<Point>& points) {
  std::printf("### %s\n\n", to_string(kind));
  std::printf(
      "| BE | configuration | threshold | LS p50 (ms) | LS p99 (ms, min-max) | p99 / alone | BE "
      "share of "
      "idle CPU | BE CPU-s | LS CPU-s | other CPU-s | requests (late, failed) |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (BeMix mix : mixes_of(points)) {
    const double alone = alone_p99(points, mix);
    for (Family family : kFamilies) {
      for (const auto& p : points) {
        if (p.mix != mix || p.family != family) continue;
        const std::string threshold = setting_label(p);
        std::printf(
            "| %s | %s | %s | %.2f | %.2f (%.2f-%.2f) | %.2f | %.2f | %.1f | %.1f | %.1f | %lld "
            "(%lld, %lld) |\n",
            to_string(mix), to_string(family), threshold.c_str(), p.p50_ms, p.p99_ms, p.p99_min_ms,
            p.p99_max_ms, ratio(p, alone), p.be_share_of_idle, p.be_cpu_s, p.ls_cpu_s,
            p.other_cpu_s, static_cast<long long>(p.sent), static_cast<long long>(p.late),
            static_cast<long long>(p.failed));
      }
    }
  }
  std::printf("\n");
  for (BeMix mix : mixes_of(points)) {
    for (Family family : {Family::kGleanerSlo, Family::kGleanerShipped, Family::kGleanerAlways}) {
      auto misses = not_matched(points, mix, family, {Family::kKubelet, Family::kKoordletStyle});
      std::printf(
          "- BE %s, %s on or below kubelet only and koordlet-style at every harvest "
          "level: %s",
          to_string(mix), to_string(family), misses.empty() ? "yes" : "no");
      for (size_t i = 0; i < misses.size(); ++i) {
        const Point& m = *misses[i];
        std::string label = to_string(m.family);
        if (m.threshold > 0) label.append(" ").append(setting_label(m));
        std::printf("%s%s at %.2f harvest, %.2fx", i == 0 ? " (not matched: " : "; ", label.c_str(),
                    m.be_share_of_idle, ratio(m, alone_p99(points, mix)));
      }
      std::printf("%s\n", misses.empty() ? "" : ")");
    }
  }
  std::printf("\n");
}

void print_summary(ServiceKind kind, const std::vector<Point>& points) {
  for (BeMix mix : mixes_of(points)) {
    const double alone = alone_p99(points, mix);
    std::printf("- %s, BE %s (LS alone p99 %.2f ms), best harvest at p99 <= 1.1x alone:",
                to_string(kind), to_string(mix), alone);
    for (Family family : kFamilies) {
      if (family == Family::kAlone) continue;
      const Point* best = nullptr;
      for (const auto& p : points) {
        if (p.mix != mix || p.family != family || ratio(p, alone) > 1.1) continue;
        if (best == nullptr || p.be_share_of_idle > best->be_share_of_idle) best = &p;
      }
      if (best == nullptr) {
        std::printf(" %s none;", to_string(family));
      } else {
        std::printf(" %s %.0f%% (%.2fx, node %.0f%%%s);", to_string(family),
                    100 * best->be_share_of_idle, ratio(*best, alone), 100 * best->node_utilisation,
                    best->threshold > 0 ? (", " + setting_label(*best)).c_str() : "");
      }
    }
    std::printf("\n");
  }
}

Chart write_chart(ServiceKind kind, const std::vector<Point>& points, const std::string& dir) {
  const std::string name = std::string("frontier-") + to_string(kind);
  const std::string dat = dir + "/" + name + ".dat";
  std::ofstream out(dat);
  out << "# " << to_string(kind) << ": BE share of idle CPU, LS p99 / LS-alone p99, threshold\n";
  const auto mixes = mixes_of(points);
  for (BeMix mix : mixes) {
    const double alone = alone_p99(points, mix);
    for (Family family : kFamilies) {
      std::vector<const Point*> series;
      for (const auto& p : points)
        if (p.mix == mix && p.family == family) series.push_back(&p);
      std::sort(series.begin(), series.end(), [](const Point* a, const Point* b) {
        return a->be_share_of_idle < b->be_share_of_idle;
      });
      // Every point, then the family's frontier: the points no other of its points beats
      // on both harvest and latency.
      out << "# " << to_string(mix) << " / " << to_string(family) << ": points\n";
      for (const Point* p : series)
        out << p->be_share_of_idle << " " << ratio(*p, alone) << " " << p->threshold << "\n";
      if (series.empty()) out << "NaN NaN 0\n";  // keeps the index numbering
      out << "\n\n# " << to_string(mix) << " / " << to_string(family) << ": frontier\n";
      std::vector<const Point*> frontier;
      double best = 1e300;
      for (auto it = series.rbegin(); it != series.rend(); ++it) {
        if (ratio(**it, alone) < best) {
          best = ratio(**it, alone);
          frontier.insert(frontier.begin(), *it);
        }
      }
      for (const Point* p : frontier)
        out << p->be_share_of_idle << " " << ratio(*p, alone) << " " << p->threshold << "\n";
      if (frontier.empty()) out << "NaN NaN 0\n";
      out << "\n\n";
    }
  }
  out.close();
  if (::access("/usr/bin/gnuplot", X_OK) != 0) {
    std::fprintf(stderr, "frontier_bench: gnuplot not installed; %s has the points\n", dat.c_str());
    return Chart::kNoGnuplot;
  }
  const std::string script = dir + "/" + name + ".gp";
  std::ofstream gp(script);
  gp << "set terminal pngcairo size " << 560 * mixes.size() << ",520 font 'sans,10'\n"
     << "set output " << quoted(dir + "/" + name + ".png") << "\n"
     << "set multiplot layout 1," << mixes.size() << " title "
     << quoted(std::string(to_string(kind)) +
               ": harvest against LS tail latency (lower right is better; lines: the frontier "
               "of each agent)")
     << "\n"
     << "set xlabel 'BE share of the CPU nobody else used'\nset ylabel 'LS p99 / LS-alone p99'\n"
     << "set key below\nset grid\nset xrange [0:1]\n";
  // One point style and one frontier line style per family, in kFamilies' order (LS alone
  // and kubelet only are single points: no line).
  struct Style {
    const char* points;
    const char* line;
  };
  constexpr Style kStyles[] = {
      {"pt 7 ps 1.5 lc rgb 'black'", ""},
      {"pt 5 ps 1.5 lc rgb 'gray40'", ""},
      {"lw 2 pt 9 ps 1.2 lc rgb 'orange'", "lw 2 lc rgb 'orange'"},
      {"lw 2 pt 13 ps 1.2 lc rgb 'skyblue'", "lw 2 lc rgb 'skyblue'"},
      {"lw 2 pt 11 ps 1.2 lc rgb 'dark-green'", "lw 2 lc rgb 'dark-green'"},
      {"lw 2 pt 15 ps 1.2 lc rgb 'red'", "lw 2 lc rgb 'red'"}};
  static_assert(std::size(kStyles) == std::size(kFamilies), "a style for every family");
  for (size_t m = 0; m < mixes.size(); ++m) {
    gp << "set title 'BE: stress-ng " << to_string(mixes[m]) << "'\nplot ";
    for (size_t f = 0; f < std::size(kFamilies); ++f) {
      const size_t index = (m * std::size(kFamilies) + f) * 2;
      gp << (f ? ", " : "") << quoted(dat) << " index " << index << " using 1:2 with points "
         << kStyles[f].points << " title " << quoted(to_string(kFamilies[f]));
      if (f >= 2) {  // the agents' frontiers as lines
        gp << ", " << quoted(dat) << " index " << index + 1 << " using 1:2 with lines "
           << kStyles[f].line << " notitle";
      }
    }
    gp << "\n";
  }
  gp << "unset multiplot\n";
  gp.close();
  const std::string cmd = "/usr/bin/gnuplot '" + script + "'";
  if (std::system(cmd.c_str()) != 0) {  // NOLINT(concurrency-mt-unsafe): no other thread forks
    std::fprintf(stderr, "frontier_bench: gnuplot failed on %s\n", script.c_str());
    return Chart::kFailed;
  }
  return Chart::kDrawn;
}

}  // namespace gleaner::bench::frontier
