// verify: every recorded path of every conda-meta record against the files in the prefix.
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <map>
#include <set>
#include <sstream>

#include "envlock/encoding.hpp"
#include "envlock/install.hpp"
#include "envlock/record_path.hpp"
#include "fs_util.hpp"
#include "link.hpp"

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

/// The path and hash columns of one RECORD row (CSV; the path may be quoted).
bool record_row(const std::string& line, std::string& path, std::string& hash) {
  std::vector<std::string> cols(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') cols.back() += line[++i];
      else if (c == '"') quoted = false;
      else cols.back() += c;
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      cols.emplace_back();
    } else if (c != '\r') {
      cols.back() += c;
    }
  }
  if (quoted || cols.size() < 2 || cols[0].empty()) return false;
  path = cols[0];
  hash = cols[1];
  return true;
}

/// One file listed in the RECORD of a pip-installed distribution.
struct PipRecordRow {
  std::string owner;     ///< "pip:<dist-info folder without .dist-info>"
  std::string expected;  ///< sha256 hex, empty when RECORD gives none
};

/// The files of pip-installed distributions: each `*.dist-info` in a site-packages folder whose
/// RECORD no conda record lists (`conda_owned`), path -> row. A file listed in such a RECORD
/// belongs to pip even when a conda record lists it too (pip replaced the conda package's file:
/// that record is shadowed), as `envlock snapshot capture` attributes it.
/// A row that leads outside the prefix is drift of its RECORD (`outside`), as install refuses such
/// a RECORD as altered (attack 22 A4).
std::map<std::string, PipRecordRow> pip_record_rows(const fs::path& prefix, const std::set<std::string>& conda_owned,
                                                    std::vector<FileDrift>& outside) {
  std::map<std::string, PipRecordRow> rows;
  const std::string host_prefix = fs::absolute(prefix).lexically_normal().string();  // absolute RECORD rows name it
  std::error_code ec;
  std::vector<std::string> sites;
  for (fs::directory_iterator it(prefix / "lib", ec), end; !ec && it != end; it.increment(ec)) {
    const std::string n = it->path().filename().string();
    if (n.starts_with("python") && fs::is_directory(it->path() / "site-packages")) sites.push_back("lib/" + n + "/site-packages");
  }
  if (fs::is_directory(prefix / "Lib/site-packages")) sites.push_back("Lib/site-packages");
  std::sort(sites.begin(), sites.end());
  for (const auto& site : sites) {
    std::vector<std::string> dist_infos;
    for (fs::directory_iterator it(prefix / site, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string n = it->path().filename().string();
      if (n.ends_with(".dist-info") && fs::is_regular_file(it->path() / "RECORD")) dist_infos.push_back(n);
    }
    std::sort(dist_infos.begin(), dist_infos.end());
    for (const auto& di : dist_infos) {
      if (conda_owned.count(site + "/" + di + "/RECORD") != 0) continue;  // conda installed it: its record covers the files
      const std::string owner = "pip:" + di.substr(0, di.size() - std::string_view(".dist-info").size());
      std::ifstream in(prefix / site / di / "RECORD", std::ios::binary);
      std::string line;
      std::string path;
      std::string hash;
      for (int n = 1; std::getline(in, line); ++n) {
        if (!record_row(line, path, hash)) continue;
        const auto rel = record_path_in_prefix(site, path, host_prefix);
        if (!rel) {
          outside.push_back({FileDrift::Kind::Modified, site + "/" + di + "/RECORD", owner,
                             "row " + std::to_string(n) + " leads outside the prefix (the RECORD was altered)"});
          continue;
        }
        if (rel->empty()) continue;
        rows.emplace(*rel, PipRecordRow{owner, record_sha256_hex(hash)});  // the first RECORD listing it wins
      }
    }
  }
  return rows;
}

/// Checks the files of `rows` (pip_record_rows()): they join `owned`; a file whose sha256 differs
/// from RECORD's is Modified, one that is gone Missing (package "pip:<dist-info folder>").
Status verify_pip_files(const fs::path& prefix, const std::map<std::string, PipRecordRow>& rows, std::set<std::string>& owned,
                        VerifyReport& report) {
  for (const auto& [rel, row] : rows) {
    owned.insert(rel);
    ++report.files_checked;
    ++report.pip_files;
    struct stat st {};
    if (::lstat((prefix / rel).c_str(), &st) != 0) {
      if (!ignored_extra(rel)) report.drift.push_back({FileDrift::Kind::Missing, rel, row.owner, "not found (listed in RECORD)"});
      continue;
    }
    if (S_ISLNK(st.st_mode)) {
      // installer and pip write regular files only; a link out of the prefix moves the code
      // python imports outside it (attack 22 A14), reported as the conda side reports a link.
      std::error_code link_ec;
      const fs::path to = fs::weakly_canonical(prefix / rel, link_ec);
      const fs::path root = fs::weakly_canonical(prefix, link_ec);
      const std::string inside = to.lexically_relative(root).generic_string();
      if (inside.empty() || inside == ".." || inside.starts_with("../")) {
        report.drift.push_back({FileDrift::Kind::Modified, rel, row.owner, "not a regular file (a link to outside the prefix)"});
        continue;
      }
    }
    if (row.expected.empty() || !S_ISREG(st.st_mode)) continue;  // RECORD itself and .pyc rows carry no hash
    auto h = detail::sha256_file(prefix / rel);
    if (!h) return h.error();
    if (*h != row.expected) {
      report.drift.push_back({FileDrift::Kind::Modified, rel, row.owner,
                              "sha256 " + short_hash(*h) + " != RECORD " + short_hash(row.expected)});
    }
  }
  return ok_status();
}

/// A prefix file found intact, by inode: a package cache file that is the same inode (a hard link)
/// and should hold the same bytes is not hashed again.
using IntactInodes = std::map<std::pair<dev_t, ino_t>, std::string>;  // -> sha256

/// The package cache entries the records were linked from, against their own info/paths.json.
Status verify_cache_entries(const std::vector<PrefixRecord>& records, const IntactInodes& intact, VerifyReport& report) {
  for (const auto& r : records) {
    if (r.extracted_package_dir.empty()) continue;
    const fs::path dir = r.extracted_package_dir;
    std::error_code ec;
    if (!fs::is_regular_file(dir / "info/paths.json", ec)) continue;  // gone, or an old package: nothing to compare
    auto text = detail::read_file(dir / "info/paths.json");
    if (!text) continue;
    const auto j = nlohmann::json::parse(*text, nullptr, false);
    if (!j.is_object() || !j.contains("paths") || !j["paths"].is_array()) {
      report.drift.push_back({FileDrift::Kind::Cache, "info/paths.json", r.dist_name(), "package cache copy does not parse"});
      continue;
    }
    for (const auto& e : j["paths"]) {
      if (!e.is_object() || !e.contains("_path") || !e["_path"].is_string()) continue;
      const std::string rel = e["_path"].get<std::string>();
      const auto type = e.find("path_type");
      if (type != e.end() && (!type->is_string() || type->get<std::string>() != "hardlink")) continue;
      if (!detail::safe_relative_path(rel)) continue;
      const auto size = e.find("size_in_bytes");
      const auto sha = e.find("sha256");
      struct stat st {};
      if (::lstat((dir / rel).c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
        report.drift.push_back({FileDrift::Kind::Cache, rel, r.dist_name(), "package cache copy not found"});
        continue;
      }
      if (size != e.end() && size->is_number_unsigned() && size->get<std::uint64_t>() != static_cast<std::uint64_t>(st.st_size)) {
        report.drift.push_back({FileDrift::Kind::Cache, rel, r.dist_name(),
                                "package cache copy: size " + std::to_string(st.st_size) + " != paths.json " +
                                    std::to_string(size->get<std::uint64_t>())});
        continue;
      }
      if (sha == e.end() || !sha->is_string()) continue;
      const std::string want = sha->get<std::string>();
      if (auto it = intact.find({st.st_dev, st.st_ino}); it != intact.end() && it->second == want) continue;
      auto h = detail::sha256_file(dir / rel);
      if (!h) return h.error();
      if (*h != want) {
        report.drift.push_back({FileDrift::Kind::Cache, rel, r.dist_name(),
                                "package cache copy: sha256 " + short_hash(*h) + " != paths.json " + short_hash(want)});
      }
    }
  }
  return ok_status();
}

}  // namespace

bool prefix_foreign_folder(std::string_view rel, bool has_conda_meta) {
  return has_conda_meta || rel == "conda-meta" || rel == "envs" || rel == "pkgs";
}

Status check_not_an_empty_conda_meta(const fs::path& prefix) {
  // A conda-meta/ with nothing in it (`mkdir -p X/conda-meta`) is not an environment: conda marks
  // one by conda-meta/history (`conda list -p X` says "Not a conda environment"), envlock by
  // conda-meta/envlock too. "0 packages: no drift" would prove an environment that is not there.
  std::error_code ec;
  const fs::path meta = prefix / "conda-meta";
  for (const char* mark : {"history", "envlock"})
    if (fs::exists(fs::symlink_status(meta / mark, ec))) return ok_status();
  for (fs::directory_iterator it(meta, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().extension() == ".json") return ok_status();
  return Error{ErrorKind::Io, prefix.string(),
               "is not an environment: its conda-meta/ holds no package record, no history and no conda-meta/envlock",
               "", "check the path given with -p (an environment folder made by envlock, conda, mamba or pixi)"};
}

Result<VerifyReport> verify_prefix(const fs::path& prefix) {
  std::error_code ec;
  if (!fs::exists(prefix, ec)) {
    return Error{ErrorKind::Io, prefix.string(), "does not exist", "", "check the path given with -p (an environment folder)"};
  }
  if (!fs::is_directory(prefix, ec)) {
    return Error{ErrorKind::Io, prefix.string(), "is not a folder, so not an environment", "",
                 "pass the environment folder (the one that holds conda-meta/) with -p"};
  }
  if (!fs::is_directory(prefix / "conda-meta", ec)) {
    return Error{ErrorKind::Io, prefix.string(), "is not an environment (it has no conda-meta/ folder)", "",
                 "check the path given with -p"};
  }
  auto records = read_conda_meta(prefix);
  if (!records) return records.error();
  if (records->empty())
    if (auto st = check_not_an_empty_conda_meta(prefix); !st) return st.error();

  VerifyReport report;
  IntactInodes intact;
  report.packages = records->size();
  std::set<std::string> owned;
  for (const auto& r : *records) {
    for (const auto& e : r.paths) owned.insert(e.path);
    for (const auto& f : r.files) owned.insert(f);
  }
  // A file a pip RECORD lists is checked against RECORD, not the (shadowed) conda record.
  std::vector<FileDrift> outside_rows;
  const auto pip_rows = pip_record_rows(prefix, owned, outside_rows);
  report.drift.insert(report.drift.end(), outside_rows.begin(), outside_rows.end());
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
      if (pip_rows.count(e.path) != 0) continue;
      ++report.files_checked;
      if (!detail::safe_relative_path(e.path)) {
        // A record edited to name a path outside the prefix (`../../etc/shadow`) is never read.
        report.drift.push_back({FileDrift::Kind::Modified, e.path, dist,
                                "the record names a path that is not a relative path inside the prefix"});
        continue;
      }
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
        } else {
          intact.emplace(std::make_pair(st.st_dev, st.st_ino), *h);
        }
      }
    }
  }

  if (auto st = verify_pip_files(prefix, pip_rows, owned, report); !st) return st.error();
  if (auto st = verify_cache_entries(*records, intact, report); !st) return st.error();

  for (auto it = fs::recursive_directory_iterator(prefix, fs::directory_options::none, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const std::string rel = it->path().lexically_relative(prefix).generic_string();
    const bool is_link = it->is_symlink(ec);
    if (!is_link && it->is_directory(ec)) {
      std::error_code meta_ec;
      if (prefix_foreign_folder(rel, fs::is_directory(it->path() / "conda-meta", meta_ec))) it.disable_recursion_pending();
      // A wheel install's staging folder (envlock/wheel.hpp): removed by the next install, not drift.
      if (rel.starts_with(".envlock-wheel-") && rel.find('/') == std::string::npos) it.disable_recursion_pending();
      continue;
    }
    if (owned.count(rel) || ignored_extra(rel)) continue;
    report.drift.push_back({FileDrift::Kind::Extra, rel, "", "no package owns it"});
  }
  if (ec) return detail::io_error(prefix, "cannot walk the environment", ec.value());
  std::stable_sort(report.drift.begin(), report.drift.end(), [](const FileDrift& a, const FileDrift& b) {
    return a.path != b.path ? a.path < b.path : a.kind < b.kind;
  });
  return report;
}

}  // namespace envlock
