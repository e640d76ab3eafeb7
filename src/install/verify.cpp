// verify: every recorded path of every conda-meta record against the files in the prefix.
#include <sys/stat.h>

#include <algorithm>
#include <set>

#include "envlock/install.hpp"
#include "fs_util.hpp"

namespace envlock {

namespace fs = std::filesystem;

namespace {

/// Paths Python and conda write at run time, never drift: __pycache__/ folders, *.pyc, and
/// the post-link message file.
bool ignored_extra(const std::string& rel) {
  if (rel == ".messages.txt") return true;
  if (rel.ends_with(".pyc")) return true;
  return rel.find("__pycache__/") != std::string::npos || rel.ends_with("__pycache__");
}

std::string short_hash(const std::string& h) { return h.size() > 12 ? h.substr(0, 12) + "…" : h; }

}  // namespace

Result<VerifyReport> verify_prefix(const fs::path& prefix) {
  std::error_code ec;
  if (!fs::is_directory(prefix / "conda-meta", ec)) {
    return Error{ErrorKind::Usage, prefix.string(), "is not an environment (it has no conda-meta/ folder)", "",
                 "check the path given with -p"};
  }
  auto records = read_conda_meta(prefix);
  if (!records) return records.error();

  VerifyReport report;
  report.packages = records->size();
  std::set<std::string> owned;
  for (const auto& r : *records) {
    const std::string dist = r.dist_name();
    std::vector<PathEntry> entries = r.paths;
    if (entries.empty()) {
      // Records without paths_data (old conda): existence only.
      for (const auto& f : r.files) {
        PathEntry e;
        e.path = f;
        entries.push_back(std::move(e));
      }
    }
    for (const auto& e : entries) {
      owned.insert(e.path);
      ++report.files_checked;
      const fs::path path = prefix / e.path;
      struct stat st {};
      if (::lstat(path.c_str(), &st) != 0) {
        report.drift.push_back({FileDrift::Kind::Missing, e.path, dist, "not found"});
        continue;
      }
      if (e.type == PathEntry::Type::Directory) {
        if (!S_ISDIR(st.st_mode)) report.drift.push_back({FileDrift::Kind::Modified, e.path, dist, "not a directory"});
        continue;
      }
      if (e.type == PathEntry::Type::SoftLink) {
        if (!S_ISLNK(st.st_mode)) report.drift.push_back({FileDrift::Kind::Modified, e.path, dist, "no longer a symlink"});
        continue;
      }
      if (S_ISLNK(st.st_mode) && r.paths.empty()) continue;
      if (!S_ISREG(st.st_mode)) {
        report.drift.push_back({FileDrift::Kind::Modified, e.path, dist, "not a regular file"});
        continue;
      }
      if (e.size_in_bytes && static_cast<std::uint64_t>(st.st_size) != *e.size_in_bytes) {
        report.drift.push_back({FileDrift::Kind::Modified, e.path, dist,
                                "size " + std::to_string(st.st_size) + " != recorded " +
                                    std::to_string(*e.size_in_bytes)});
        continue;
      }
      if (!e.sha256.empty()) {
        auto h = detail::sha256_file(path);
        if (!h) return h.error();
        if (*h != e.sha256) {
          report.drift.push_back({FileDrift::Kind::Modified, e.path, dist,
                                  "sha256 " + short_hash(*h) + " != recorded " + short_hash(e.sha256)});
        }
      }
    }
  }

  for (auto it = fs::recursive_directory_iterator(prefix, fs::directory_options::none, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const std::string rel = it->path().lexically_relative(prefix).generic_string();
    if (rel == "conda-meta") {
      it.disable_recursion_pending();
      continue;
    }
    const bool is_link = it->is_symlink(ec);
    if (!is_link && it->is_directory(ec)) continue;
    if (owned.count(rel) || ignored_extra(rel)) continue;
    report.drift.push_back({FileDrift::Kind::Extra, rel, "", "no package owns it"});
  }
  if (ec) return detail::io_error(prefix, "cannot walk the environment", ec.value());
  std::sort(report.drift.begin(), report.drift.end(),
            [](const FileDrift& a, const FileDrift& b) { return a.path < b.path; });
  return report;
}

}  // namespace envlock
