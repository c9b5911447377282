#include "policy/snapshot_diff.h"

#include <map>
#include <set>

#include "common/json_writer.h"
#include "probe/snapshot.h"

namespace tg::policy {
namespace {

using common::Json;

// Field names that identify a record inside an array, in order of preference.
constexpr const char* kIdentityKeys[] = {"provider", "soname", "name", "path", "index"};

// The identity key shared by every element of `arr` with unique values, or "".
std::string IdentityKey(const Json& arr) {
  if (arr.empty()) return "";
  for (const char* key : kIdentityKeys) {
    std::set<std::string> seen;
    bool ok = true;
    for (const Json& e : arr) {
      auto it = e.is_object() ? e.find(key) : e.end();
      if (!e.is_object() || it == e.end() || !(it->is_string() || it->is_number_integer())) {
        ok = false;
        break;
      }
      std::string id = it->is_string() ? it->get<std::string>() : it->dump();
      if (!seen.insert(id).second) {
        ok = false;
        break;
      }
    }
    if (ok) return key;
  }
  return "";
}

std::string IdOf(const Json& e, const std::string& key) {
  const Json& v = e.at(key);
  return v.is_string() ? v.get<std::string>() : common::WriteJson(v, -1, common::JsonNotice::kNone);
}

// The identity as shown in a path. Long ids are shortened: every entry below a record repeats
// its path, so a 700 KB id with 2 000 nested differences made gigabytes of paths. Matching still
// uses the full id; only the label is short.
constexpr std::size_t kMaxPathId = 64;
std::string PathId(const std::string& id) {
  if (id.size() <= kMaxPathId) return id;
  return id.substr(0, kMaxPathId - 3) + "...";
}

bool Ignored(const std::string& path, const std::vector<std::string>& ignore) {
  for (const std::string& i : ignore) {
    if (path == i) return true;
    if (path.size() > i.size() && path.compare(0, i.size(), i) == 0 &&
        (path[i.size()] == '.' || path[i.size()] == '[')) {
      return true;
    }
  }
  return false;
}

void Walk(const Json& a, const Json& b, const std::string& path,
          const std::vector<std::string>& ignore, std::vector<DiffEntry>* out) {
  if (Ignored(path, ignore)) return;
  auto child = [&](const std::string& key) {
    return path.empty() ? PathId(key) : path + "." + PathId(key);
  };
  if (a.is_object() && b.is_object()) {
    for (auto it = a.begin(); it != a.end(); ++it) {
      auto jt = b.find(it.key());
      std::string p = child(it.key());
      if (jt == b.end()) {
        if (!Ignored(p, ignore)) out->push_back({DiffEntry::Kind::kRemoved, p, &*it, nullptr});
      } else {
        Walk(*it, *jt, p, ignore, out);
      }
    }
    for (auto jt = b.begin(); jt != b.end(); ++jt) {
      if (a.find(jt.key()) != a.end()) continue;
      std::string p = child(jt.key());
      if (!Ignored(p, ignore)) out->push_back({DiffEntry::Kind::kAdded, p, nullptr, &*jt});
    }
    return;
  }
  if (a.is_array() && b.is_array()) {
    std::string key = IdentityKey(a).empty() || IdentityKey(b).empty() ? "" : IdentityKey(a);
    if (!key.empty() && IdentityKey(b) == key) {
      std::map<std::string, const Json*> bm;
      for (const Json& e : b) bm[IdOf(e, key)] = &e;
      std::set<std::string> in_a;
      for (const Json& e : a) {
        std::string id = IdOf(e, key);
        in_a.insert(id);
        std::string p = path + "[" + PathId(id) + "]";
        auto it = bm.find(id);
        if (it == bm.end()) {
          if (!Ignored(p, ignore)) out->push_back({DiffEntry::Kind::kRemoved, p, &e, nullptr});
        } else {
          Walk(e, *it->second, p, ignore, out);
        }
      }
      for (const Json& e : b) {
        std::string id = IdOf(e, key);
        std::string p = path + "[" + PathId(id) + "]";
        if (!in_a.count(id) && !Ignored(p, ignore)) {
          out->push_back({DiffEntry::Kind::kAdded, p, nullptr, &e});
        }
      }
      return;
    }
    std::size_t n = std::max(a.size(), b.size());
    for (std::size_t i = 0; i < n; ++i) {
      std::string p = path + "[" + std::to_string(i) + "]";
      if (i >= b.size()) {
        if (!Ignored(p, ignore)) out->push_back({DiffEntry::Kind::kRemoved, p, &a[i], nullptr});
      } else if (i >= a.size()) {
        if (!Ignored(p, ignore)) out->push_back({DiffEntry::Kind::kAdded, p, nullptr, &b[i]});
      } else {
        Walk(a[i], b[i], p, ignore, out);
      }
    }
    return;
  }
  if (a != b)
    out->push_back({DiffEntry::Kind::kChanged, path.empty() ? "(document)" : path, &a, &b});
}

common::Result<std::unique_ptr<const Json>> LoadNormalised(const std::string& path) {
  TG_ASSIGN_OR_RETURN(probe::Snapshot s, probe::LoadSnapshotFile(path));
  return std::make_unique<const Json>(probe::ToJson(s));
}

std::string Short(const Json& v) {
  std::string s = common::WriteJson(v, -1, common::JsonNotice::kNone);
  if (s.size() > 200) s = s.substr(0, 200) + "...";
  return s;
}

}  // namespace

std::string_view DiffKindName(DiffEntry::Kind k) {
  switch (k) {
    case DiffEntry::Kind::kAdded:
      return "added";
    case DiffEntry::Kind::kRemoved:
      return "removed";
    case DiffEntry::Kind::kChanged:
      break;
  }
  return "changed";
}

const std::vector<std::string>& DefaultDiffIgnores() {
  static const std::vector<std::string> kIgnores = {"taken_at"};
  return kIgnores;
}

std::vector<DiffEntry> DiffJson(const Json& a, const Json& b,
                                const std::vector<std::string>& ignore) {
  std::vector<DiffEntry> out;
  Walk(a, b, "", ignore, &out);
  return out;
}

common::Result<SnapshotDiff> DiffSnapshotFiles(const std::string& a_path, const std::string& b_path,
                                               const std::vector<std::string>& ignore) {
  std::set<std::string> seen;
  for (const std::string& i : ignore) {
    // "" is a prefix of every path: it would silently hide every difference.
    if (i.empty() || i.front() == '.' || i.front() == '[') {
      return common::Status::InvalidArg("--ignore: '" + i +
                                        "' is not a dotted path (an empty path or a bare suffix "
                                        "would hide every difference)");
    }
    if (!seen.insert(i).second) {
      return common::Status::InvalidArg("--ignore: '" + i + "' is given twice");
    }
  }
  // Diff the normalised documents: key order, absent-vs-default and formatting of the input
  // files do not matter, only what the snapshots say. Only the normalised form of a file is
  // kept past its load, so the parsed and typed forms of both files are never alive at once.
  SnapshotDiff d;
  TG_ASSIGN_OR_RETURN(d.a, LoadNormalised(a_path));
  TG_ASSIGN_OR_RETURN(d.b, LoadNormalised(b_path));
  std::vector<std::string> all = DefaultDiffIgnores();
  all.insert(all.end(), ignore.begin(), ignore.end());
  d.entries = DiffJson(*d.a, *d.b, all);
  return d;
}

Json DiffEntryToJson(const DiffEntry& d) {
  Json e = {{"kind", std::string(DiffKindName(d.kind))}, {"path", d.path}};
  if (d.kind != DiffEntry::Kind::kAdded) e["before"] = d.before ? *d.before : Json();
  if (d.kind != DiffEntry::Kind::kRemoved) e["after"] = d.after ? *d.after : Json();
  return e;
}

Json DiffToJson(const std::vector<DiffEntry>& diff) {
  Json changes = Json::array();
  int added = 0, removed = 0, changed = 0;
  for (const DiffEntry& d : diff) {
    changes.push_back(DiffEntryToJson(d));
    (d.kind == DiffEntry::Kind::kAdded     ? added
     : d.kind == DiffEntry::Kind::kRemoved ? removed
                                           : changed)++;
  }
  return Json{{"equal", diff.empty()},
              {"changed", changed},
              {"added", added},
              {"removed", removed},
              {"differences", changes}};
}

std::string DiffLine(const DiffEntry& d) {
  auto shown = [](const Json* v) { return v ? Short(*v) : std::string("null"); };
  switch (d.kind) {
    case DiffEntry::Kind::kAdded:
      return "+ " + d.path + ": " + shown(d.after) + "\n";
    case DiffEntry::Kind::kRemoved:
      return "- " + d.path + ": " + shown(d.before) + "\n";
    case DiffEntry::Kind::kChanged:
      break;
  }
  return "~ " + d.path + ": " + shown(d.before) + " -> " + shown(d.after) + "\n";
}

std::string DiffToText(const std::vector<DiffEntry>& diff) {
  std::string out;
  for (const DiffEntry& d : diff) out += DiffLine(d);
  return out;
}

}  // namespace tg::policy
