// Layer merging and dive's efficiency metric.
//
// The merged filesystem is a sorted vector of 16-byte views of layer entries. A layer is applied
// as one sorted merge (its entries stable-sorted by path, the last write of each path winning)
// whenever that is exactly what applying its entries one by one does: always, unless an entry
// replaces a directory with a non-directory (which hides what is below the directory, including
// what the same layer wrote there earlier). Such a layer is replayed entry by entry on an
// ordered map, which is the specification's sequence literally.
#include "audit/image/image_fs.h"

#include <algorithm>
#include <deque>
#include <map>
#include <numeric>
#include <string_view>
#include <vector>

namespace tg::audit {

namespace {

bool IsDeletion(const LayerEntry& e) {
  return e.type == EntryType::kOpaque || e.type == EntryType::kWhiteout;
}

bool PathLess(const FsNode& a, std::string_view b) { return a.path() < b; }

}  // namespace

FileSystem::const_iterator FileSystem::lower_bound(std::string_view path) const {
  return std::lower_bound(nodes_.begin(), nodes_.end(), path, PathLess);
}

FileSystem::const_iterator FileSystem::find(std::string_view path) const {
  auto it = lower_bound(path);
  return it != nodes_.end() && it->path() == path ? it : nodes_.end();
}

// Builds FileSystem::nodes_ layer by layer (see the file comment).
class FsMerger {
 public:
  explicit FsMerger(FileSystem* fs) : nodes_(fs->nodes_) { nodes_.clear(); }

  void Apply(const ImageLayer& layer) {
    // Deletions first: whiteouts only ever hide *lower* layers' content, never the same layer's.
    ApplyDeletions(layer.scan.entries);
    if (!AddSorted(layer)) AddInOrder(layer);
  }

 private:
  // Whiteouts remove their path and everything below it, opaque markers what is below theirs;
  // every marker of a layer sees the same lower content, so their union is removed at once.
  void ApplyDeletions(const std::vector<LayerEntry>& entries) {
    std::vector<std::string_view> self;   // whiteouts
    std::vector<std::string_view> below;  // whiteouts and opaque markers
    for (const auto& e : entries) {
      if (e.type == EntryType::kWhiteout) self.push_back(e.path);
      if (IsDeletion(e)) below.push_back(e.path);
    }
    if (below.empty()) return;
    std::sort(self.begin(), self.end());
    std::sort(below.begin(), below.end());
    if (std::binary_search(below.begin(), below.end(), std::string_view())) {
      nodes_.clear();  // a marker at the root: every path is below it
      return;
    }
    auto gone = [&](const FsNode& n) {
      const std::string_view p = n.path();
      if (std::binary_search(self.begin(), self.end(), p)) return true;
      for (std::size_t i = p.find('/'); i != std::string_view::npos; i = p.find('/', i + 1)) {
        if (std::binary_search(below.begin(), below.end(), p.substr(0, i))) return true;
      }
      return false;
    };
    nodes_.erase(std::remove_if(nodes_.begin(), nodes_.end(), gone), nodes_.end());
  }

  // The layer's writes as one sorted merge; false (nothing changed) when an entry would replace
  // a directory that exists at that moment with a non-directory. Until the first such entry no
  // path is hidden, so what exists at each entry is the lower content plus the layer's earlier
  // writes: exactly what the walk below sees.
  bool AddSorted(const ImageLayer& layer) {
    const auto& entries = layer.scan.entries;
    std::vector<std::uint32_t> order;
    for (std::uint32_t i = 0; i < entries.size(); ++i) {
      if (!IsDeletion(entries[i])) order.push_back(i);
    }
    if (order.empty()) return true;
    std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
      return entries[a].path < entries[b].path;
    });
    std::vector<FsNode> out;
    out.reserve(nodes_.size() + order.size());
    auto lower = nodes_.begin();
    for (std::size_t i = 0; i < order.size();) {
      const std::string_view p = entries[order[i]].path;
      while (lower != nodes_.end() && lower->path() < p) out.push_back(*lower++);
      const bool had = lower != nodes_.end() && lower->path() == p;
      bool exists = had;
      EntryType type = had ? lower->type() : EntryType::kFile;
      std::size_t j = i;
      for (; j < order.size() && entries[order[j]].path == p; ++j) {
        const EntryType t = entries[order[j]].type;
        if (exists && type == EntryType::kDir && t != EntryType::kDir) return false;
        exists = true;
        type = t;
      }
      out.emplace_back(&entries[order[j - 1]], layer.index);
      if (had) ++lower;
      i = j;
    }
    out.insert(out.end(), lower, nodes_.end());
    nodes_ = std::move(out);
    return true;
  }

  // The layer's writes one by one, in archive order.
  void AddInOrder(const ImageLayer& layer) {
    std::map<std::string_view, FsNode> fs;
    for (const auto& n : nodes_) fs.emplace_hint(fs.end(), n.path(), n);
    nodes_.clear();
    for (const auto& e : layer.scan.entries) {
      if (IsDeletion(e)) continue;
      // A non-directory replacing a directory hides everything below it.
      auto it = fs.find(e.path);
      if (it != fs.end() && it->second.type() == EntryType::kDir && e.type != EntryType::kDir) {
        const std::string prefix = std::string(e.path) + "/";
        auto below = fs.lower_bound(prefix);
        while (below != fs.end() && below->first.starts_with(prefix)) below = fs.erase(below);
      }
      fs.insert_or_assign(e.path, FsNode(&e, layer.index));
    }
    nodes_.reserve(fs.size());
    for (const auto& [path, n] : fs) nodes_.push_back(n);
  }

  std::vector<FsNode>& nodes_;
};

FileSystem MergeLayers(const Image& image) {
  FileSystem fs;
  FsMerger merger(&fs);
  for (const auto& l : image.layers) merger.Apply(l);
  return fs;
}

std::uint64_t SizeUnder(const FileSystem& fs, std::string_view path) {
  std::uint64_t total = 0;
  auto self = fs.find(path);
  if (self != fs.end() && self->type() == EntryType::kFile) total += self->size();
  const std::string prefix = path.empty() ? "" : std::string(path) + "/";
  for (auto it = fs.lower_bound(prefix); it != fs.end() && it->path().starts_with(prefix); ++it) {
    if (it->type() == EntryType::kFile) total += it->size();
  }
  return total;
}

Efficiency ComputeEfficiency(const Image& image) {
  FileSystem merged;
  return MergeWithEfficiency(image, &merged);
}

namespace {

// One leaf entry of some layer (16 bytes): its bytes are the entry's size, or for a whiteout or
// opaque marker the bytes it deletes (deleted[k]).
struct Leaf {
  const LayerEntry* entry = nullptr;
  std::uint32_t layer = 0;  // position in Image::layers
  std::uint32_t deleted = kNotDeletion;
  static constexpr std::uint32_t kNotDeletion = ~0u;
};

// Paths with >= 2 copies: the largest (cumulative bytes, then path) that any report shows.
constexpr std::size_t kInefficientKept = 20;

void RankInefficient(std::vector<Efficiency::Path>* paths) {
  auto larger = [](const Efficiency::Path& a, const Efficiency::Path& b) {
    return a.cumulative != b.cumulative ? a.cumulative > b.cumulative : a.path < b.path;
  };
  const std::size_t keep = std::min(paths->size(), kInefficientKept);
  std::partial_sort(paths->begin(), paths->begin() + static_cast<std::ptrdiff_t>(keep),
                    paths->end(), larger);
  paths->resize(keep);
}

}  // namespace

Efficiency MergeWithEfficiency(const Image& image, FileSystem* merged) {
  // One 16-byte record per leaf entry, sorted by path below so each path's copies are one run:
  // no per-path map of copied strings.
  std::vector<Leaf> leaves;
  std::vector<std::uint64_t> deleted;
  std::size_t total = 0;
  for (const auto& l : image.layers) total += l.scan.entries.size();
  leaves.reserve(total);
  Efficiency eff;
  // The filesystem as stacked so far is exactly what a whiteout measures, so the merge and the
  // metric share one pass (the merge is the largest cost of the audit after reading).
  FileSystem& stacked = *merged;
  FsMerger merger(&stacked);
  for (std::size_t li = 0; li < image.layers.size(); ++li) {
    const auto& l = image.layers[li];
    std::uint64_t layer_bytes = 0;
    for (const auto& e : l.scan.entries) {
      // dive visits leaves only; directories carry no bytes, so skipping them changes no sum.
      if (e.type == EntryType::kDir) continue;
      Leaf leaf{&e, static_cast<std::uint32_t>(li)};
      if (IsDeletion(e)) {
        leaf.deleted = static_cast<std::uint32_t>(deleted.size());
        deleted.push_back(SizeUnder(stacked, e.path));
      }
      leaves.push_back(leaf);
      layer_bytes += e.size;
    }
    if (l.index > 0) eff.user_bytes += layer_bytes;
    merger.Apply(l);
  }
  auto bytes = [&](const Leaf& x) {
    return x.deleted == Leaf::kNotDeletion ? x.entry->size : deleted[x.deleted];
  };
  std::sort(leaves.begin(), leaves.end(),
            [](const Leaf& a, const Leaf& b) { return a.entry->path < b.entry->path; });
  std::uint64_t min_sum = 0;
  std::uint64_t all_sum = 0;
  eff.layer_wasted_bytes.assign(image.layers.size(), 0);
  std::vector<Efficiency::Path> inefficient;
  for (std::size_t i = 0; i < leaves.size();) {
    const std::string_view path = leaves[i].entry->path;
    std::size_t j = i;
    std::uint64_t min = bytes(leaves[i]), cumulative = 0;
    for (; j < leaves.size() && leaves[j].entry->path == path; ++j) {
      min = std::min(min, bytes(leaves[j]));
      cumulative += bytes(leaves[j]);
    }
    min_sum += min;
    all_sum += cumulative;
    const int copies = static_cast<int>(j - i);
    if (copies >= 2) {
      eff.wasted_bytes += cumulative;
      inefficient.push_back({std::string(path), copies, cumulative});
      if (inefficient.size() >= 4 * kInefficientKept) RankInefficient(&inefficient);
      for (std::size_t k = i; k < j; ++k)
        eff.layer_wasted_bytes[leaves[k].layer] += bytes(leaves[k]);
    }
    i = j;
  }
  RankInefficient(&inefficient);
  eff.inefficient = std::move(inefficient);
  eff.score = all_sum == 0 ? 1.0 : static_cast<double>(min_sum) / static_cast<double>(all_sum);
  eff.user_wasted_percent = eff.user_bytes == 0 ? 0.0
                                                : static_cast<double>(eff.wasted_bytes) /
                                                      static_cast<double>(eff.user_bytes);
  return eff;
}

std::optional<std::string> ResolvePath(const FileSystem& fs, std::string_view path) {
  std::deque<std::string> todo;
  auto push_parts = [&](std::string_view p) {
    std::vector<std::string> parts;
    std::size_t i = 0;
    while (i <= p.size()) {
      std::size_t j = p.find('/', i);
      if (j == std::string_view::npos) j = p.size();
      if (j > i) parts.emplace_back(p.substr(i, j - i));
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
    if (it != fs.end() && it->type() == EntryType::kSymlink) {
      if (++hops > 40) return std::nullopt;
      const std::string_view t = it->link();
      if (!t.empty() && t.front() == '/') cur.clear();
      push_parts(t);
      continue;
    }
    cur = std::move(cand);
  }
  return cur;
}

}  // namespace tg::audit
