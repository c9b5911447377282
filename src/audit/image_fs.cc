// Layer merging and dive's efficiency metric.
#include "audit/image_fs.h"

#include <algorithm>
#include <deque>
#include <string_view>
#include <vector>

namespace tg::audit {

namespace {

// Removes `path` and everything below it; with `keep_self`, only what is below it.
void EraseTree(FileSystem* fs, const std::string& path, bool keep_self) {
  if (!keep_self) fs->erase(path);
  std::string prefix = path.empty() ? "" : path + "/";
  auto it = fs->lower_bound(prefix);
  while (it != fs->end() && it->first.starts_with(prefix)) it = fs->erase(it);
}

void ApplyLayer(FileSystem* fs, const ImageLayer& layer) {
  // Deletions first: whiteouts only ever hide *lower* layers' content, never the same layer's.
  for (const auto& e : layer.scan.entries) {
    if (e.type == EntryType::kOpaque) EraseTree(fs, e.path, /*keep_self=*/true);
    if (e.type == EntryType::kWhiteout) EraseTree(fs, e.path, /*keep_self=*/false);
  }
  for (const auto& e : layer.scan.entries) {
    if (e.type == EntryType::kOpaque || e.type == EntryType::kWhiteout) continue;
    // A non-directory replacing a directory hides everything below it.
    auto it = fs->find(e.path);
    if (it != fs->end() && it->second.type == EntryType::kDir && e.type != EntryType::kDir) {
      EraseTree(fs, e.path, /*keep_self=*/true);
    }
    FsNode& n = (*fs)[e.path];
    n.type = e.type;
    n.size = e.size;
    n.layer = layer.index;
    n.link = e.link;
    n.mode = e.mode;
    n.mtime = e.mtime;
  }
}

}  // namespace

FileSystem MergeLayers(const Image& image) {
  FileSystem fs;
  for (const auto& l : image.layers) ApplyLayer(&fs, l);
  return fs;
}

std::uint64_t SizeUnder(const FileSystem& fs, const std::string& path) {
  std::uint64_t total = 0;
  auto self = fs.find(path);
  if (self != fs.end() && self->second.type == EntryType::kFile) total += self->second.size;
  std::string prefix = path.empty() ? "" : path + "/";
  for (auto it = fs.lower_bound(prefix); it != fs.end() && it->first.starts_with(prefix); ++it) {
    if (it->second.type == EntryType::kFile) total += it->second.size;
  }
  return total;
}

Efficiency ComputeEfficiency(const Image& image) {
  FileSystem merged;
  return MergeWithEfficiency(image, &merged);
}

Efficiency MergeWithEfficiency(const Image& image, FileSystem* merged) {
  // One record per leaf entry (32 bytes, the path viewed in the layer's entry), sorted by path
  // below so each path's copies are one run: no per-path map of copied strings.
  struct Leaf {
    std::string_view path;
    std::uint64_t size = 0;
    std::size_t layer = 0;
  };
  std::vector<Leaf> leaves;
  std::size_t total = 0;
  for (const auto& l : image.layers) total += l.scan.entries.size();
  leaves.reserve(total);
  Efficiency eff;
  // The filesystem as stacked so far is exactly what a whiteout measures, so the merge and the
  // metric share one pass (the merge is the largest cost of the audit after reading).
  FileSystem& stacked = *merged;
  stacked.clear();
  for (std::size_t li = 0; li < image.layers.size(); ++li) {
    const auto& l = image.layers[li];
    std::uint64_t layer_bytes = 0;
    for (const auto& e : l.scan.entries) {
      // dive visits leaves only; directories carry no bytes, so skipping them changes no sum.
      if (e.type == EntryType::kDir) continue;
      std::uint64_t size = e.size;
      if (e.type == EntryType::kWhiteout || e.type == EntryType::kOpaque) {
        size = SizeUnder(stacked, e.path);
      }
      leaves.push_back({e.path, size, li});
      layer_bytes += e.size;
    }
    if (l.index > 0) eff.user_bytes += layer_bytes;
    ApplyLayer(&stacked, l);
  }
  std::sort(leaves.begin(), leaves.end(),
            [](const Leaf& a, const Leaf& b) { return a.path < b.path; });
  std::uint64_t min_sum = 0;
  std::uint64_t all_sum = 0;
  eff.layer_wasted_bytes.assign(image.layers.size(), 0);
  for (std::size_t i = 0; i < leaves.size();) {
    std::size_t j = i;
    std::uint64_t min = leaves[i].size, cumulative = 0;
    for (; j < leaves.size() && leaves[j].path == leaves[i].path; ++j) {
      min = std::min(min, leaves[j].size);
      cumulative += leaves[j].size;
    }
    min_sum += min;
    all_sum += cumulative;
    const int copies = static_cast<int>(j - i);
    if (copies >= 2) {
      eff.wasted_bytes += cumulative;
      eff.inefficient.push_back({std::string(leaves[i].path), copies, cumulative});
      for (std::size_t k = i; k < j; ++k) eff.layer_wasted_bytes[leaves[k].layer] += leaves[k].size;
    }
    i = j;
  }
  eff.score = all_sum == 0 ? 1.0 : static_cast<double>(min_sum) / static_cast<double>(all_sum);
  eff.user_wasted_percent = eff.user_bytes == 0 ? 0.0
                                                : static_cast<double>(eff.wasted_bytes) /
                                                      static_cast<double>(eff.user_bytes);
  std::sort(eff.inefficient.begin(), eff.inefficient.end(), [](const auto& a, const auto& b) {
    return a.cumulative != b.cumulative ? a.cumulative > b.cumulative : a.path < b.path;
  });
  return eff;
}

std::optional<std::string> ResolvePath(const FileSystem& fs, const std::string& path) {
  std::deque<std::string> todo;
  auto push_parts = [&](const std::string& p) {
    std::vector<std::string> parts;
    std::size_t i = 0;
    while (i <= p.size()) {
      std::size_t j = p.find('/', i);
      if (j == std::string::npos) j = p.size();
      if (j > i) parts.push_back(p.substr(i, j - i));
      i = j + 1;
    }
    for (auto it = parts.rbegin(); it != parts.rend(); ++it) todo.push_front(*it);
  };
  push_parts(path);
  std::string cur;
  int hops = 0;
  while (!todo.empty()) {
    std::string c = std::move(todo.front());
    todo.pop_front();
    if (c == ".") continue;
    if (c == "..") {
      auto slash = cur.rfind('/');
      cur = slash == std::string::npos ? "" : cur.substr(0, slash);
      continue;
    }
    std::string cand = cur.empty() ? c : cur + "/" + c;
    auto it = fs.find(cand);
    if (it != fs.end() && it->second.type == EntryType::kSymlink) {
      if (++hops > 40) return std::nullopt;
      const std::string& t = it->second.link;
      if (!t.empty() && t.front() == '/') cur.clear();
      push_parts(t);
      continue;
    }
    cur = std::move(cand);
  }
  return cur;
}

}  // namespace tg::audit
