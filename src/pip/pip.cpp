// pip-installed distributions: *.dist-info (PEP 376/627: METADATA, INSTALLER, RECORD, WHEEL),
// PEP 610 direct_url.json, and the site-packages folders of a prefix (include/envlock/pip.hpp).

#include <algorithm>
#include <cctype>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "envlock/encoding.hpp"
#include "envlock/pip.hpp"
#include "envlock/text.hpp"
#include "envlock/url.hpp"
#include "envlock/version.hpp"

namespace envlock {

namespace fs = std::filesystem;

namespace {

// The most a metadata file of a dist-info (METADATA with its long description, RECORD of a
// package of tens of thousands of files) is read to: a link to /dev/zero must not fill memory.
constexpr std::uintmax_t kMaxMetadataFile = 64u << 20;

// Why a metadata file is not read, or empty when it can be: a FIFO (opening it would wait for a
// writer forever), a device (/dev/zero never ends), a socket, or a file over kMaxMetadataFile.
// Links are followed; a file that does not exist is not refused here (slurp says nullopt).
std::string unreadable_reason(const fs::path& p) {
  std::error_code ec;
  const auto st = fs::status(p, ec);
  if (ec || st.type() == fs::file_type::not_found) return {};
  if (st.type() != fs::file_type::regular) return "is not a regular file (a FIFO, device or socket), so it is not read";
  if (const auto size = fs::file_size(p, ec); !ec && size > kMaxMetadataFile)
    return "is larger than " + std::to_string(kMaxMetadataFile >> 20) + " MiB, so it is not read";
  return {};
}

// The whole file as bytes, or nullopt when it cannot be opened or unreadable_reason() refuses it.
std::optional<std::string> slurp(const fs::path& p) {
  if (!unreadable_reason(p).empty()) return std::nullopt;
  std::ifstream in(p, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// An error for a metadata file of `dist_info` that slurp() refuses; ok when it is readable or absent.
Status check_readable(const fs::path& p, const std::string& shown) {
  if (auto why = unreadable_reason(p); !why.empty())
    return Error{ErrorKind::Io, shown, why, "", "a dist-info holds regular files only; reinstall the distribution"};
  return ok_status();
}

// RFC 4180 rows: fields separated by ',', optionally double-quoted with "" as an escaped quote.
// Returns false for an unterminated quote.
bool split_csv_row(const std::string& line, std::vector<std::string>& out) {
  out.clear();
  std::string field;
  bool quoted = false, was_quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"') {
        if (i + 1 < line.size() && line[i + 1] == '"') {
          field += '"';
          ++i;
        } else {
          quoted = false;
        }
      } else {
        field += c;
      }
    } else if (c == '"' && field.empty() && !was_quoted) {
      quoted = was_quoted = true;
    } else if (c == ',') {
      out.push_back(std::move(field));
      field.clear();
      was_quoted = false;
    } else if (c != '\r') {
      field += c;
    }
  }
  if (quoted) return false;
  out.push_back(std::move(field));
  return true;
}

// RFC 822-style headers of METADATA: stops at the first blank line (the body follows).
std::map<std::string, std::string> read_headers(const std::string& text) {
  std::map<std::string, std::string> h;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) break;
    if (line[0] == ' ' || line[0] == '\t') continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = ascii_lower(line.substr(0, colon));
    if (!h.count(key)) h[key] = trim(std::string_view(line).substr(colon + 1));
  }
  return h;
}

// Every value of a header that may repeat (`Requires-Dist`), in file order; continuation lines
// (starting with white space) are not part of these one-line fields.
std::vector<std::string> header_values(const std::string& text, std::string_view key) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) break;
    const auto colon = line.find(':');
    if (colon != key.size() || line[0] == ' ' || line[0] == '\t') continue;
    bool same = true;
    for (std::size_t i = 0; i < colon && same; ++i)
      same = std::tolower(static_cast<unsigned char>(line[i])) == key[i];
    if (same) out.push_back(trim(std::string_view(line).substr(colon + 1)));
  }
  return out;
}

// The file: URL of an editable install's working tree from setuptools' PEP 660 hook
// `__editable__.<name>-<version>.pth` in `site` (name compared PEP 503-normalised; the file names
// it with `_` for `-`): its first line that is an absolute path (the "lenient" mode). The
// "strict" mode's `import __editable___<name>_finder` names no folder: an empty URL then.
// nullopt when there is no such file.
std::optional<std::string> editable_pth(const fs::path& site, const std::string& name, const std::string& version) {
  const std::string want = pep503_normalize(name) + "-" + version;
  std::error_code ec;
  for (fs::directory_iterator it(site, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string f = it->path().filename().string();
    if (!f.starts_with("__editable__.") || !f.ends_with(".pth")) continue;
    const std::string stem = f.substr(13, f.size() - 13 - 4);
    const auto dash = stem.rfind('-');
    if (dash == std::string::npos || pep503_normalize(stem.substr(0, dash)) + stem.substr(dash) != want) continue;
    std::string url;
    if (auto text = slurp(it->path())) {
      std::istringstream in(*text);
      for (std::string line; std::getline(in, line);) {
        line = trim(line);
        if (line.starts_with("/")) {
          url = file_url_from_path(fs::path(line).lexically_normal().string());
          break;
        }
      }
    }
    return url;
  }
  return std::nullopt;
}

}  // namespace

std::string PipDistribution::normalized_name() const { return pep503_normalize(name); }

std::string PipDistribution::requirement() const {
  // pip's fragments: the archive hash, then `subdirectory=`, joined by '&'
  // (direct_url_as_pep440_direct_reference, src/pip/_internal/utils/direct_url_helpers.py).
  auto ref = [&](std::string u, const std::string& hash) {
    std::string frag = hash;
    if (!subdirectory.empty()) frag += (frag.empty() ? "" : "&") + ("subdirectory=" + subdirectory);
    return name + " @ " + u + (frag.empty() ? "" : "#" + frag);
  };
  switch (source) {
    case PipSource::Index: return name + "==" + version;
    case PipSource::Vcs: {
      std::string u = vcs + "+" + url;
      if (!commit_id.empty()) u += "@" + commit_id;
      return ref(u, "");
    }
    case PipSource::Archive: return ref(url, archive_sha256.empty() ? "" : "sha256=" + archive_sha256);
    case PipSource::Editable:
      // Never a pin (an index has no such build); an unknown working tree is said to be one.
      if (url.empty()) return name + " @ (editable install, location unknown)";
      return ref(url, "");
    case PipSource::Directory: return ref(url, "");
  }
  return name + "==" + version;
}

namespace {

// The value of `key=` among the `&`-separated pairs of a URL fragment or query, percent-decoded;
// empty when there is none.
std::string pair_value(std::string_view pairs, std::string_view key) {
  while (!pairs.empty()) {
    const auto amp = pairs.find('&');
    const std::string_view pair = pairs.substr(0, amp);
    if (pair.size() > key.size() && pair.starts_with(key) && pair[key.size()] == '=')
      return percent_decode(pair.substr(key.size() + 1));
    if (amp == std::string_view::npos) break;
    pairs.remove_prefix(amp + 1);
  }
  return {};
}

}  // namespace

PipSourceInfo pip_source_info(const PipPackage& p) {
  PipSourceInfo s;
  std::string url = redact_url(p.url);
  if (!p.requirement.empty()) {
    // A direct reference `name @ URL` says more than `url`: a prefix's VCS install has the plain
    // repository URL there and `name @ git+URL@<commit>` as its requirement (to_pip_package).
    const std::string req = redact_text(p.requirement);
    if (auto at = req.find(" @ "); at != std::string::npos) {
      std::string ref = trim(std::string_view(req).substr(at + 3));
      if (auto semi = ref.find(';'); semi != std::string::npos) ref = trim(std::string_view(ref).substr(0, semi));
      if (!ref.empty() && ref.front() != '(') url = ref;
    }
  }
  if (url.empty()) {
    s.kind = p.editable ? PipSourceInfo::Kind::Editable : PipSourceInfo::Kind::Index;
    return s;
  }
  const auto scheme = url.find("://");
  const auto plus = url.find('+');
  const bool vcs = scheme != std::string::npos && plus != std::string::npos && plus < scheme &&
                   (url.starts_with("git+") || url.starts_with("hg+") || url.starts_with("svn+") || url.starts_with("bzr+"));
  if (vcs) {
    s.kind = PipSourceInfo::Kind::Vcs;
    std::string loc = url;
    // pixi.lock: git+https://host/repo.git?rev=main#<commit>; PEP 508: git+https://host/repo.git@<commit>.
    // pip's fragment is `&`-separated `key=value` pairs (`egg=`, `subdirectory=`, a hash); pixi's
    // is the bare commit, with the subdirectory in the query (`?subdirectory=pkg&rev=main`).
    if (auto hash = loc.find('#'); hash != std::string::npos) {
      const std::string frag = loc.substr(hash + 1);
      loc.resize(hash);
      s.subdirectory = pair_value(frag, "subdirectory");
      for (std::string_view rest = frag; !rest.empty();) {
        const auto amp = rest.find('&');
        const std::string_view pair = rest.substr(0, amp);
        if (!pair.empty() && pair.find('=') == std::string_view::npos) s.commit = std::string(pair);
        if (amp == std::string_view::npos) break;
        rest.remove_prefix(amp + 1);
      }
    }
    if (auto q = loc.find('?'); q != std::string::npos) {
      if (s.subdirectory.empty()) s.subdirectory = pair_value(std::string_view(loc).substr(q + 1), "subdirectory");
      loc.resize(q);
    }
    if (auto at = loc.rfind('@'), slash = loc.rfind('/'); at != std::string::npos && slash != std::string::npos && at > slash) {
      if (s.commit.empty()) s.commit = loc.substr(at + 1);
      loc.resize(at);
    }
    s.location = loc;
    if (p.editable) s.kind = PipSourceInfo::Kind::Editable;
    return s;
  }
  std::string loc = url;
  if (auto hash = loc.find('#'); hash != std::string::npos) {
    s.subdirectory = pair_value(std::string_view(loc).substr(hash + 1), "subdirectory");
    loc.resize(hash);
  }
  const bool local = loc.starts_with("file:") || loc.starts_with("/") || loc.starts_with("./") ||
                     loc.starts_with("../") || loc == "." || loc == "..";
  s.kind = p.editable ? PipSourceInfo::Kind::Editable : (local ? PipSourceInfo::Kind::Path : PipSourceInfo::Kind::Url);
  s.location = loc;
  return s;
}

std::string_view pip_source_kind_name(PipSourceInfo::Kind kind) {
  switch (kind) {
    case PipSourceInfo::Kind::Index: return "index";
    case PipSourceInfo::Kind::Url: return "url";
    case PipSourceInfo::Kind::Path: return "path";
    case PipSourceInfo::Kind::Vcs: return "vcs";
    case PipSourceInfo::Kind::Editable: return "editable";
  }
  return "index";
}

std::string PipSourceInfo::to_string() const {
  std::string out(pip_source_kind_name(kind));
  if (!location.empty()) out += " " + location;
  if (!commit.empty()) out += "@" + commit;
  if (!subdirectory.empty()) out += "#subdirectory=" + subdirectory;
  return out;
}

PipPackage to_pip_package(const PipDistribution& d) {
  PipPackage pp;
  pp.name = d.name;
  pp.version = d.version;
  pp.requires_dist = d.requires_dist;
  pp.requires_python = d.requires_python;
  pp.editable = d.source == PipSource::Editable;
  if (d.source != PipSource::Index) {
    pp.url = d.url;
    const bool hex64 = d.archive_sha256.size() == 64 && std::all_of(d.archive_sha256.begin(), d.archive_sha256.end(), [](char c) {
                         return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
                       });
    if (hex64) pp.sha256 = d.archive_sha256;
    pp.requirement = d.requirement();
  }
  return pp;
}

namespace {

// A direct-reference URL without its `vcs+` scheme prefix, `#fragment` and `@revision` (after
// the last '/'), and without a trailing '/'.
std::string comparable_url(std::string_view url) {
  std::string u(trim(url));
  if (const auto hash = u.find('#'); hash != std::string::npos) u.resize(hash);
  if (const auto scheme = u.find("://"); scheme != std::string::npos) {
    if (const auto plus = u.find('+'); plus != std::string::npos && plus < scheme) u.erase(0, plus + 1);
  }
  if (const auto at = u.rfind('@'), slash = u.rfind('/'); at != std::string::npos && slash != std::string::npos && at > slash) {
    u.resize(at);
  }
  while (!u.empty() && u.back() == '/') u.pop_back();
  return u;
}

}  // namespace

PipRequirementCheck check_pip_requirement(std::string_view requirement, const PipPackage& installed) {
  using Outcome = PipRequirementCheck::Outcome;
  std::string_view req = requirement.substr(0, requirement.find(';'));  // markers held: it is installed
  std::size_t i = 0;
  while (i < req.size() && std::isspace(static_cast<unsigned char>(req[i]))) ++i;
  const std::size_t name_start = i;
  while (i < req.size() && (std::isalnum(static_cast<unsigned char>(req[i])) || req[i] == '-' || req[i] == '_' || req[i] == '.')) ++i;
  if (i == name_start) return {};
  std::string rest = trim(req.substr(i));
  if (rest.starts_with('[')) {
    const auto close = rest.find(']');
    if (close == std::string::npos) return {};
    rest = trim(std::string_view(rest).substr(close + 1));
  }
  if (rest.starts_with('@')) {
    const std::string wanted = comparable_url(std::string_view(rest).substr(1));
    // Another subdirectory of the same repository or archive is another project.
    PipPackage want;
    want.url = trim(std::string_view(rest).substr(1));
    const bool same_subdirectory = pip_source_info(want).subdirectory == pip_source_info(installed).subdirectory;
    if (!installed.url.empty() && comparable_url(installed.url) == wanted && same_subdirectory) return {Outcome::Met, ""};
    return {Outcome::OtherSource, trim(std::string_view(rest).substr(1))};
  }
  if (rest.starts_with('(') && rest.ends_with(')')) rest = trim(std::string_view(rest).substr(1, rest.size() - 2));
  if (rest.empty()) return {Outcome::Met, ""};
  auto have = Version::parse(installed.version);
  if (!have) return {};
  std::stringstream clauses(rest);
  for (std::string clause; std::getline(clauses, clause, ',');) {
    clause = trim(clause);
    static const char* const kOps[] = {"===", "~=", "==", "!=", "<=", ">=", "<", ">"};
    std::string op;
    for (const char* o : kOps) {
      if (clause.starts_with(o)) {
        op = o;
        break;
      }
    }
    if (op.empty()) return {};
    std::string value = trim(std::string_view(clause).substr(op.size()));
    if (op == "===") {
      if (value != installed.version) return {Outcome::Excluded, clause};
      continue;
    }
    const bool prefix = value.ends_with(".*");
    if (prefix) value.resize(value.size() - 2);
    auto v = Version::parse(value);
    if (!v || (prefix && op != "==" && op != "!=")) return {};
    const auto cmp = have->compare(*v);
    if (op == "==") {
      if (prefix ? have->starts_with(*v) : cmp == 0) continue;
      return {cmp < 0 ? Outcome::TooLow : Outcome::TooHigh, clause};
    }
    if (op == "!=") {
      if (prefix ? !have->starts_with(*v) : cmp != 0) continue;
      return {Outcome::Excluded, clause};
    }
    if (op == "~=") {
      if (have->compatible_with(*v)) continue;
      return {cmp < 0 ? Outcome::TooLow : Outcome::TooHigh, clause};
    }
    if ((op == ">=" && cmp >= 0) || (op == ">" && cmp > 0) || (op == "<=" && cmp <= 0) || (op == "<" && cmp < 0)) continue;
    return {op[0] == '>' ? Outcome::TooLow : Outcome::TooHigh, clause};
  }
  return {Outcome::Met, ""};
}

Result<std::vector<RecordEntry>> parse_record(std::string_view text, const std::string& where_file) {
  std::vector<RecordEntry> out;
  std::istringstream in{std::string(text)};
  std::string line;
  int lineno = 0;
  std::vector<std::string> cols;
  while (std::getline(in, line)) {
    ++lineno;
    if (trim(line).empty()) continue;
    const std::string where = where_file + ":" + std::to_string(lineno);
    if (!split_csv_row(line, cols) || cols.size() != 3 || cols[0].empty()) {
      return Error{ErrorKind::Parse, where, "expected `path,hash,size`", "  " + line, "RECORD rows are CSV (PEP 376)"};
    }
    RecordEntry e;
    e.path = cols[0];
    if (!cols[1].empty()) {
      if (!cols[1].starts_with("sha256=")) {
        return Error{ErrorKind::Parse, where, "unsupported hash `" + cols[1].substr(0, cols[1].find('=')) + "`", "  " + line,
                     "envlock checks sha256 RECORD hashes, which pip always writes"};
      }
      e.sha256 = record_sha256_hex(cols[1]);
      if (e.sha256.empty()) return Error{ErrorKind::Parse, where, "the sha256 is not 32 bytes of urlsafe base64", "  " + line, ""};
    }
    if (!cols[2].empty()) {
      std::uint64_t size = 0;
      for (char c : cols[2]) {
        if (c < '0' || c > '9' || size > (UINT64_MAX - 9) / 10) {
          return Error{ErrorKind::Parse, where, "the size is not a number", "  " + line, ""};
        }
        size = size * 10 + static_cast<std::uint64_t>(c - '0');
      }
      e.size = size;
    }
    out.push_back(std::move(e));
  }
  return out;
}

Result<PipDistribution> read_dist_info(const fs::path& dir, const std::string& prefix_relative, DistInfoParts parts) {
  PipDistribution d;
  d.dist_info = prefix_relative;
  for (const char* part : {"METADATA", "RECORD", "direct_url.json"})
    if (auto st = check_readable(dir / part, prefix_relative + "/" + part); !st) return st.error();
  const auto metadata = slurp(dir / "METADATA");
  if (!metadata) {
    return Error{ErrorKind::Io, prefix_relative + "/METADATA", "missing: the distribution's name and version are unknown", "",
                 "reinstall the distribution (pip install --force-reinstall --no-deps <name>)"};
  }
  const auto headers = read_headers(*metadata);
  if (auto it = headers.find("name"); it != headers.end()) d.name = it->second;
  if (auto it = headers.find("version"); it != headers.end()) d.version = it->second;
  if (auto it = headers.find("requires-python"); it != headers.end()) d.requires_python = it->second;
  d.requires_dist = header_values(*metadata, "requires-dist");
  if (d.name.empty() || d.version.empty()) {
    return Error{ErrorKind::Parse, prefix_relative + "/METADATA", "has no Name or Version header", "",
                 "core metadata (PEP 566) needs both; reinstall the distribution"};
  }
  if (auto inst = slurp(dir / "INSTALLER")) {
    std::istringstream in(*inst);
    std::string first;
    std::getline(in, first);
    d.installer = trim(first);
  }
  if (auto wheel = slurp(dir / "WHEEL")) {
    std::istringstream in(*wheel);
    for (std::string line; std::getline(in, line);) {
      if (line.starts_with("Tag:")) d.wheel_tags.push_back(trim(std::string_view(line).substr(4)));
    }
    std::sort(d.wheel_tags.begin(), d.wheel_tags.end());
  }
  const auto record = parts == DistInfoParts::All ? slurp(dir / "RECORD") : std::optional<std::string>();
  if (!record && parts == DistInfoParts::All) {
    return Error{ErrorKind::Io, prefix_relative + "/RECORD",
                 "missing: " + d.name + " " + d.version + " lists no installed files, so it cannot be verified or restored", "",
                 "reinstall it with pip (pip install --force-reinstall --no-deps " + d.name + "==" + d.version + ")"};
  }
  if (record) {
    auto rows = parse_record(*record, prefix_relative + "/RECORD");
    if (!rows) return rows.error();
    d.files = std::move(*rows);
    std::sort(d.files.begin(), d.files.end(), [](const RecordEntry& a, const RecordEntry& b) { return a.path < b.path; });
  }
  if (auto direct = slurp(dir / "direct_url.json")) {
    const auto j = nlohmann::json::parse(*direct, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("url") || !j["url"].is_string()) {
      return Error{ErrorKind::Parse, prefix_relative + "/direct_url.json", "not a PEP 610 document (a JSON object with a url)", "",
                   "reinstall the distribution"};
    }
    try {
    d.url = redact_url(j["url"].get<std::string>());
    d.subdirectory = j.value("subdirectory", "");  // PEP 610: the project's folder in the source
    if (j.contains("vcs_info") && j["vcs_info"].is_object()) {
      const auto& v = j["vcs_info"];
      d.source = PipSource::Vcs;
      d.vcs = v.value("vcs", "");
      d.commit_id = v.value("commit_id", "");
      d.requested_revision = v.value("requested_revision", "");
    } else if (j.contains("archive_info") && j["archive_info"].is_object()) {
      const auto& a = j["archive_info"];
      d.source = PipSource::Archive;
      if (a.contains("hashes") && a["hashes"].is_object()) d.archive_sha256 = a["hashes"].value("sha256", "");
      if (d.archive_sha256.empty()) {
        const std::string h = a.value("hash", "");  // legacy "sha256=<hex>"
        if (h.starts_with("sha256=")) d.archive_sha256 = h.substr(7);
      }
    } else if (j.contains("dir_info") && j["dir_info"].is_object()) {
      d.source = j["dir_info"].value("editable", false) ? PipSource::Editable : PipSource::Directory;
    } else {
      return Error{ErrorKind::Parse, prefix_relative + "/direct_url.json", "has none of vcs_info, archive_info, dir_info", "",
                   "PEP 610 requires exactly one of them"};
    }
    } catch (const nlohmann::json::exception& ex) {
      return Error{ErrorKind::Parse, prefix_relative + "/direct_url.json", std::string("a value has the wrong type: ") + ex.what(), "",
                   "PEP 610 values are strings and booleans; reinstall the distribution"};
    }
  } else if (auto pth = editable_pth(dir.parent_path(), d.name, d.version)) {
    // No direct_url.json but setuptools' PEP 660 hook `__editable__.<name>-<version>.pth`: an
    // editable install all the same (an installer that writes no PEP 610 record, as uv's
    // `--no-installer-metadata` or a copied environment).
    d.source = PipSource::Editable;
    d.url = *pth;
  }
  return d;
}

std::vector<PipDistribution> read_egg_links(const fs::path& site_packages, const std::string& prefix_relative_site,
                                            const HostPathResolver& resolve_tree) {
  std::vector<PipDistribution> out;
  std::error_code ec;
  std::vector<fs::path> links;
  for (fs::directory_iterator it(site_packages, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().extension() == ".egg-link" && it->is_regular_file(ec)) links.push_back(it->path());
  std::sort(links.begin(), links.end());
  for (const auto& link : links) {
    const auto text = slurp(link);
    if (!text) continue;
    std::istringstream in(*text);
    std::string first;
    std::getline(in, first);
    first = trim(first);
    PipDistribution d;
    d.name = link.stem().string();
    d.source = PipSource::Editable;
    d.installer = "setuptools";  // `setup.py develop` (pip install -e before PEP 660) writes it
    d.dist_info = prefix_relative_site + "/" + link.filename().string();
    if (!first.empty() && first.front() == '/') d.url = file_url_from_path(fs::path(first).lexically_normal().string());
    // The version is in the source tree's <name>.egg-info/PKG-INFO, when the tree is here.
    if (!first.empty()) {
      for (const std::string& stem : {d.name, pep503_normalize(d.name)}) {
        std::string under = stem;
        std::replace(under.begin(), under.end(), '-', '_');
        const fs::path host_info = fs::path(first) / (under + ".egg-info") / "PKG-INFO";
        // Under --root, the tree is read inside the root (a relative link path is not resolved).
        std::optional<fs::path> local_info = host_info;
        if (resolve_tree) local_info = host_info.is_absolute() ? resolve_tree(host_info) : std::nullopt;
        if (!local_info) continue;
        if (auto info = slurp(*local_info)) {
          const auto h = read_headers(*info);
          if (auto v = h.find("version"); v != h.end()) d.version = v->second;
          if (auto n = h.find("name"); n != h.end() && !n->second.empty()) d.name = n->second;
          break;
        }
      }
    }
    // pip owns the link file itself (no RECORD lists it; its hash is not recorded).
    std::error_code sec;
    const auto size = fs::file_size(link, sec);
    d.files.push_back(RecordEntry{link.filename().string(), "", sec ? std::nullopt : std::optional<std::uint64_t>(size)});
    out.push_back(std::move(d));
  }
  return out;
}

std::vector<std::string> site_packages_dirs(const fs::path& prefix) {
  std::vector<std::string> site_dirs;
  std::error_code ec;
  for (fs::directory_iterator it(prefix / "lib", ec), end; !ec && it != end; it.increment(ec)) {
    const std::string n = it->path().filename().string();
    if (n.starts_with("python") && fs::is_directory(it->path() / "site-packages")) site_dirs.push_back("lib/" + n + "/site-packages");
  }
  if (fs::is_directory(prefix / "Lib/site-packages", ec)) site_dirs.push_back("Lib/site-packages");
  std::sort(site_dirs.begin(), site_dirs.end());
  return site_dirs;
}

std::vector<StaleDistInfo> keep_newest_dist_infos(std::vector<PipDistribution>& dists) {
  auto newer = [](const PipDistribution& a, const PipDistribution& b) {
    const auto va = Version::parse(a.version), vb = Version::parse(b.version);
    if (va && vb && *va != *vb) return *vb < *va;
    return a.dist_info < b.dist_info;
  };
  std::vector<std::pair<std::string, PipDistribution>> named;  // normalised name, distribution
  named.reserve(dists.size());
  for (auto& d : dists) named.emplace_back(d.normalized_name(), std::move(d));
  std::sort(named.begin(), named.end(), [&](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : newer(a.second, b.second);
  });
  dists.clear();
  std::vector<StaleDistInfo> stale;
  const std::string* last = nullptr;
  for (auto& [name, d] : named) {
    if (last != nullptr && *last == name) {
      stale.push_back({std::move(d), dists.back().dist_info});
      continue;
    }
    dists.push_back(std::move(d));
    last = &name;
  }
  return stale;
}

std::vector<fs::path> dist_info_dirs(const fs::path& site_packages) {
  std::vector<fs::path> infos;
  std::error_code ec;
  for (fs::directory_iterator it(site_packages, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() == ".dist-info" && it->is_directory(ec)) infos.push_back(it->path());
  }
  std::sort(infos.begin(), infos.end());
  return infos;
}

}  // namespace envlock
