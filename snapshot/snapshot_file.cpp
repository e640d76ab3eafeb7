// The snapshot file: an envlock.lock document (Lockfile::to_yaml) followed by a `snapshot:`
// section (host facts, prefixes, files, drift, pip distributions, shadowed records, problems).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_map>
#include <yaml-cpp/yaml.h>

#include "envlock/atomic_file.hpp"
#include "envlock/hash.hpp"
#include "envlock/paths.hpp"
#include "envlock/snapshot.hpp"
#include "envlock/text.hpp"
#include "envlock/url.hpp"
#include "emit.hpp"
#include "yaml_source.hpp"

namespace envlock {

namespace fs = std::filesystem;

namespace {

// ----- writing ---------------------------------------------------------------------------------
//
// The snapshot section is written by the one YAML emitter (src/yaml/emit.hpp) straight into one
// string (a 700-package prefix has ~7,000 file lines; yaml-cpp's Emitter once spent most of the
// capture time on them), with the lockfile's quoting policy: a string that any YAML 1.1 or 1.2
// reader could take for a number, boolean or null is double-quoted.

using yaml::BlockWriter;

// A JSON value inside a flow collection; every string double-quoted.
void json_flow(BlockWriter& w, const nlohmann::json& j) {
  if (j.is_object()) {
    w.raw("{");
    bool first = true;
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (!first) w.raw(", ");
      first = false;
      w.flow_scalar(it.key());
      w.raw(": ");
      json_flow(w, it.value());
    }
    w.raw("}");
  } else if (j.is_array()) {
    w.raw("[");
    bool first = true;
    for (const auto& v : j) {
      if (!first) w.raw(", ");
      first = false;
      json_flow(w, v);
    }
    w.raw("]");
  } else if (j.is_string()) {
    w.raw(yaml::double_quoted(j.get_ref<const std::string&>()));
  } else if (j.is_null()) {
    w.raw("~");
  } else {
    w.raw(j.dump());  // numbers and booleans
  }
}

// `key: <json>` in block context: objects as nested block maps, arrays as flow lists, every
// string double-quoted, so the reverse mapping is exact.
void json_entry(BlockWriter& w, std::string_view k, const nlohmann::json& j) {
  if (j.is_object()) {
    w.open(k, j.empty(), "{}");
    for (auto it = j.begin(); it != j.end(); ++it) json_entry(w, it.key(), it.value());
    w.close();
    return;
  }
  w.begin_value(k);
  if (j.is_string()) w.raw(yaml::double_quoted(j.get_ref<const std::string&>()));
  else if (j.is_null()) w.raw("~");
  else if (j.is_array()) json_flow(w, j);
  else w.raw(j.dump());
  w.end_line();
}

const char* source_name(PipSource s) {
  switch (s) {
    case PipSource::Index: return "index";
    case PipSource::Editable: return "editable";
    case PipSource::Vcs: return "vcs";
    case PipSource::Archive: return "archive";
    case PipSource::Directory: return "directory";
  }
  return "index";
}

void emit_host(BlockWriter& w, const HostFacts& h) {
  w.kv("platform", h.platform);
  w.open("os", false, "");
  w.kv("id", h.os.id);
  w.kv("version-id", h.os.version_id);
  w.kv("version-codename", h.os.version_codename);
  w.kv("pretty-name", h.os.pretty_name);
  w.close();
  w.kv("kernel", h.kernel);
  w.kv("glibc", h.glibc);
  w.open("libstdcxx", false, "");
  w.kv("glibcxx", h.libstdcxx_glibcxx);
  w.kv("cxxabi", h.libstdcxx_cxxabi);
  w.close();
  w.open("cpu", false, "");
  w.kv("arch", h.cpu_arch);
  w.kv("level", h.cpu_level);
  w.close();
  if (h.page_size) w.kv_num("page-size", *h.page_size);
  if (h.nvidia) {
    w.open("nvidia", false, "");
    w.kv("driver", h.nvidia->driver_version);
    w.kv("cuda", h.nvidia->cuda_version);
    w.kv_nonempty("driver-nvidia-smi", h.nvidia->smi_driver_version);
    w.kv_nonempty("libcuda", h.nvidia->libcuda_version);
    w.open("gpus", h.nvidia->gpus.empty(), "[]");
    for (const auto& g : h.nvidia->gpus) {
      w.begin_item_map();
      w.kv("name", g.name);
      w.kv_nonempty("architecture", g.architecture);
      w.kv_nonempty("compute-capability", g.compute_capability);
      if (g.memory_mib) w.kv_num("memory-mib", *g.memory_mib);
      w.kv_nonempty("uuid", g.uuid);
      w.end_item_map();
    }
    w.close();
    w.close();
  }
  if (!h.system_package_manager.empty()) {
    w.open("system-packages", false, "");
    w.kv("manager", h.system_package_manager);
    w.open("packages", h.system_packages.empty(), "[]");
    for (const auto& p : h.system_packages) {
      w.begin_item();
      w.raw("[");
      w.flow_scalar(p.name);
      w.raw(", ");
      w.flow_scalar(p.version);
      w.raw(", ");
      w.flow_scalar(p.architecture);
      w.raw(", ");
      w.flow_scalar(p.status);
      w.raw("]");
      w.end_line();
    }
    w.close();
    w.close();
  }
  if (!h.system_python.empty()) {
    w.open("system-python", false, "");
    for (const auto& sp : h.system_python) {
      w.begin_item_map();
      w.kv("site", sp.site);
      w.open("packages", sp.packages.empty(), "[]");
      for (const auto& p : sp.packages) {
        w.begin_item();
        w.raw("[");
        for (const std::string* f : {&p.name, &p.version, &p.installer, &p.source}) {
          if (f != &p.name) w.raw(", ");
          w.flow_scalar(*f);
        }
        w.raw("]");
        w.end_line();
      }
      w.close();
      w.end_item_map();
    }
    w.close();
  }
}

/// Issue 17, point 9: a snapshot names no home folder. A path (or `file://` URL) under it is
/// written `~/…` and read back against the reader's home folder (docs/snapshot.md, "No home paths").
std::string home_spelled(const std::string& path_or_url) {
  const fs::path home = home_folder();
  if (home.empty()) return path_or_url;
  if (path_or_url.starts_with("file:")) {
    const auto path = path_from_file_url(path_or_url);
    if (!path) return path_or_url;
    const fs::path p = fs::path(*path).lexically_normal();
    return is_under(p, home) ? tilde_path(p, home) : path_or_url;
  }
  return tilde_path(path_or_url, home);
}

/// The inverse of home_spelled() for a field that holds a path (`url`: a `file://` URL).
std::string home_expanded(const std::string& text, bool url) {
  const fs::path home = home_folder();
  if (home.empty() || !(text == "~" || text.starts_with("~/"))) return text;
  const std::string path = expand_home(text, home);
  return url ? file_url_from_path(path) : path;
}

void emit_pip(BlockWriter& w, const PipDistribution& d) {
  w.begin_item_map();
  w.kv("name", d.name);
  w.kv("version", d.version);
  w.kv("installer", d.installer);
  w.kv("source", source_name(d.source));
  // An editable or path source under the home folder as `~/…` (capture warns when it lies
  // outside the project); read back against the reader's home folder.
  w.kv_nonempty("url", home_spelled(d.url));
  w.kv_nonempty("vcs", d.vcs);
  w.kv_nonempty("commit-id", d.commit_id);
  w.kv_nonempty("requested-revision", d.requested_revision);
  w.kv_nonempty("archive-sha256", d.archive_sha256);
  w.kv_nonempty("subdirectory", d.subdirectory);
  w.kv("dist-info", d.dist_info);
  w.kv_nonempty("shadows", d.shadows);
  if (!d.wheel_tags.empty()) w.list("wheel-tags", d.wheel_tags);
  w.kv_nonempty("requires-python", d.requires_python);
  if (!d.requires_dist.empty()) w.list("requires-dist", d.requires_dist);
  w.open("record", d.files.empty(), "[]");
  for (const auto& f : d.files) {
    w.begin_item();
    w.raw("[");
    w.flow_scalar(f.path);
    w.raw(", ");
    w.flow_scalar(f.sha256);
    w.raw(", ");
    if (f.size) w.raw(std::to_string(*f.size));
    else w.raw("~");
    w.raw("]");
    w.end_line();
  }
  w.close();
  w.end_item_map();
}

void emit_drift(BlockWriter& w, const Drift& d) {
  w.kv_bool("hashed", d.hashed);
  w.open("modified", d.modified.empty(), "[]");
  for (const auto& m : d.modified) {
    w.begin_item_map();
    w.kv("path", m.path);
    w.kv("owner", m.owner);
    w.kv_nonempty("expected-sha256", m.expected_sha256);
    w.kv_nonempty("actual-sha256", m.actual_sha256);
    if (m.expected_size) w.kv_num("expected-size", *m.expected_size);
    if (m.actual_size) w.kv_num("actual-size", *m.actual_size);
    w.end_item_map();
  }
  w.close();
  w.list("unowned", d.unowned);
  w.open("missing", d.missing.empty(), "{}");
  for (const auto& [pkg, files] : d.missing) w.list(pkg, files);
  w.close();
}

// ----- reading ---------------------------------------------------------------------------------

struct Bad {
  Error error;
};

class Reader {
 public:
  explicit Reader(std::string source) : source_(std::move(source)) {}

  [[noreturn]] void fail(const YAML::Node& at, const std::string& message, const std::string& hint = "") const {
    std::string where = source_;
    if (at.IsDefined()) {
      const auto m = at.Mark();
      if (m.line >= 0) where += ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
    }
    throw Bad{Error{ErrorKind::Parse, where, message, "", hint}};
  }

  YAML::Node map(const YAML::Node& parent, const char* key, bool required = true) const {
    const YAML::Node n = parent[key];
    if (!n.IsDefined() || n.IsNull()) {
      if (required) fail(parent, std::string("missing `") + key + "`");
      return YAML::Node(YAML::NodeType::Map);
    }
    if (!n.IsMap()) fail(n, std::string("`") + key + "` must be a mapping");
    return n;
  }

  YAML::Node seq(const YAML::Node& parent, const char* key) const {
    const YAML::Node n = parent[key];
    if (!n.IsDefined() || n.IsNull()) return YAML::Node(YAML::NodeType::Sequence);
    if (!n.IsSequence()) fail(n, std::string("`") + key + "` must be a list");
    return n;
  }

  // Refuses a map anywhere below `n` that holds a key twice (yaml-cpp keeps both and `[]` sees
  // only one of them, so an edited file would be read differently from what it shows).
  void unique_keys(const YAML::Node& n) const {
    if (n.IsSequence()) {
      for (const auto& item : n) unique_keys(item);
      return;
    }
    if (!n.IsMap()) return;
    std::unordered_map<std::string, YAML::Mark> seen;
    for (const auto& kv : n) {
      if (kv.first.IsScalar()) {
        auto [it, inserted] = seen.emplace(kv.first.Scalar(), kv.first.Mark());
        if (!inserted) {
          fail(kv.first, "duplicate key `" + kv.first.Scalar() + "` (first at line " + std::to_string(it->second.line + 1) + ")",
               "keep one of the two entries, or capture the snapshot again");
        }
      }
      unique_keys(kv.second);
    }
  }

  std::string scalar(const YAML::Node& n, const std::string& what) const {
    if (n.IsNull()) return "";
    if (!n.IsScalar()) fail(n, what + " must be a plain value");
    return n.Scalar();
  }

  std::string s(const YAML::Node& parent, const char* key) const {
    const YAML::Node n = parent[key];
    if (!n.IsDefined()) return "";
    return scalar(n, std::string("`") + key + "`");
  }

  std::optional<std::uint64_t> u64(const YAML::Node& n, const std::string& what) const {
    if (!n.IsDefined() || n.IsNull()) return std::nullopt;
    const std::string t = scalar(n, what);
    std::uint64_t v = 0;
    if (t.empty()) fail(n, what + " must be a non-negative integer");
    for (char c : t) {
      if (c < '0' || c > '9' || v > (UINT64_MAX - 9) / 10) fail(n, what + " must be a non-negative integer");
      v = v * 10 + static_cast<std::uint64_t>(c - '0');
    }
    return v;
  }

  std::vector<std::string> strings(const YAML::Node& parent, const char* key) const {
    std::vector<std::string> out;
    for (const auto& item : seq(parent, key)) out.push_back(scalar(item, std::string("an entry of `") + key + "`"));
    return out;
  }

  bool boolean(const YAML::Node& parent, const char* key) const {
    const YAML::Node n = parent[key];
    if (!n.IsDefined()) return false;
    const std::string t = scalar(n, std::string("`") + key + "`");
    if (t == "true") return true;
    if (t == "false") return false;
    fail(n, std::string("`") + key + "` must be true or false");
  }

  nlohmann::json json(const YAML::Node& n) const {
    if (n.IsMap()) {
      nlohmann::json j = nlohmann::json::object();
      for (const auto& kvp : n) j[kvp.first.Scalar()] = json(kvp.second);
      return j;
    }
    if (n.IsSequence()) {
      nlohmann::json j = nlohmann::json::array();
      for (const auto& v : n) j.push_back(json(v));
      return j;
    }
    if (!n.IsDefined() || n.IsNull()) return nullptr;
    if (n.Tag() == "!") return n.Scalar();  // quoted: a string
    const std::string t = n.Scalar();
    if (t == "true") return true;
    if (t == "false") return false;
    const auto parsed = nlohmann::json::parse(t, nullptr, false);
    if (parsed.is_discarded() || !parsed.is_number()) return t;
    return parsed;
  }

  const std::string& source() const { return source_; }

 private:
  std::string source_;
};

PipSource parse_source(const Reader& r, const YAML::Node& n) {
  const std::string t = r.scalar(n, "`source`");
  if (t == "index") return PipSource::Index;
  if (t == "editable") return PipSource::Editable;
  if (t == "vcs") return PipSource::Vcs;
  if (t == "archive") return PipSource::Archive;
  if (t == "directory") return PipSource::Directory;
  r.fail(n, "unknown pip source `" + t + "`", "one of index, editable, vcs, archive, directory");
}

HostFacts read_host(const Reader& r, const YAML::Node& n) {
  HostFacts h;
  h.platform = r.s(n, "platform");
  const auto os = r.map(n, "os", false);
  h.os.id = r.s(os, "id");
  h.os.version_id = r.s(os, "version-id");
  h.os.version_codename = r.s(os, "version-codename");
  h.os.pretty_name = r.s(os, "pretty-name");
  h.kernel = r.s(n, "kernel");
  h.glibc = r.s(n, "glibc");
  const auto cxx = r.map(n, "libstdcxx", false);
  h.libstdcxx_glibcxx = r.s(cxx, "glibcxx");
  h.libstdcxx_cxxabi = r.s(cxx, "cxxabi");
  const auto cpu = r.map(n, "cpu", false);
  h.cpu_arch = r.s(cpu, "arch");
  h.cpu_level = r.s(cpu, "level");
  h.page_size = r.u64(n["page-size"], "`page-size`");
  if (n["nvidia"].IsDefined() && !n["nvidia"].IsNull()) {
    const auto nv = r.map(n, "nvidia");
    NvidiaFacts f;
    f.driver_version = r.s(nv, "driver");
    f.cuda_version = r.s(nv, "cuda");
    f.smi_driver_version = r.s(nv, "driver-nvidia-smi");
    f.libcuda_version = r.s(nv, "libcuda");
    for (const auto& g : r.seq(nv, "gpus")) {
      if (!g.IsMap()) r.fail(g, "a GPU entry must be a mapping");
      GpuInfo gi;
      gi.name = r.s(g, "name");
      gi.architecture = r.s(g, "architecture");
      gi.compute_capability = r.s(g, "compute-capability");
      gi.memory_mib = r.u64(g["memory-mib"], "`memory-mib`");
      gi.uuid = r.s(g, "uuid");
      f.gpus.push_back(std::move(gi));
    }
    h.nvidia = std::move(f);
  }
  const auto sys = r.map(n, "system-packages", false);
  h.system_package_manager = r.s(sys, "manager");
  for (const auto& p : r.seq(sys, "packages")) {
    if (!p.IsSequence() || p.size() != 4) r.fail(p, "a system package entry must be [name, version, architecture, status]");
    h.system_packages.push_back({r.scalar(p[0], "name"), r.scalar(p[1], "version"), r.scalar(p[2], "architecture"),
                                 r.scalar(p[3], "status")});
  }
  for (const auto& sp : r.seq(n, "system-python")) {
    if (!sp.IsMap()) r.fail(sp, "a system-python entry must be a mapping with `site` and `packages`");
    SystemPythonSite site;
    site.site = r.s(sp, "site");
    for (const auto& p : r.seq(sp, "packages")) {
      if (!p.IsSequence() || p.size() != 4) r.fail(p, "a system-python package entry must be [name, version, installer, source]");
      site.packages.push_back({r.scalar(p[0], "name"), r.scalar(p[1], "version"), r.scalar(p[2], "installer"), r.scalar(p[3], "source")});
    }
    h.system_python.push_back(std::move(site));
  }
  return h;
}

PipDistribution read_pip(const Reader& r, const YAML::Node& n) {
  if (!n.IsMap()) r.fail(n, "a pip entry must be a mapping");
  PipDistribution d;
  d.name = r.s(n, "name");
  d.version = r.s(n, "version");
  d.installer = r.s(n, "installer");
  if (n["source"].IsDefined()) d.source = parse_source(r, n["source"]);
  // A legacy editable (`*.egg-link`) whose working tree was not readable has no version.
  if (d.name.empty() || (d.version.empty() && d.source != PipSource::Editable))
    r.fail(n, "a pip entry needs a name and a version");
  d.url = home_expanded(r.s(n, "url"), true);
  d.vcs = r.s(n, "vcs");
  d.commit_id = r.s(n, "commit-id");
  d.requested_revision = r.s(n, "requested-revision");
  d.archive_sha256 = r.s(n, "archive-sha256");
  d.subdirectory = r.s(n, "subdirectory");
  d.dist_info = r.s(n, "dist-info");
  d.shadows = r.s(n, "shadows");
  d.wheel_tags = r.strings(n, "wheel-tags");
  d.requires_python = r.s(n, "requires-python");
  d.requires_dist = r.strings(n, "requires-dist");
  for (const auto& f : r.seq(n, "record")) {
    if (!f.IsSequence() || f.size() != 3) r.fail(f, "a record entry must be [path, sha256, size]");
    d.files.push_back({r.scalar(f[0], "path"), r.scalar(f[1], "sha256"), r.u64(f[2], "size")});
  }
  return d;
}

Drift read_drift(const Reader& r, const YAML::Node& n) {
  Drift d;
  d.hashed = r.boolean(n, "hashed");
  for (const auto& m : r.seq(n, "modified")) {
    if (!m.IsMap()) r.fail(m, "a modified-file entry must be a mapping");
    d.modified.push_back({r.s(m, "path"), r.s(m, "owner"), r.s(m, "expected-sha256"), r.s(m, "actual-sha256"),
                          r.u64(m["expected-size"], "`expected-size`"), r.u64(m["actual-size"], "`actual-size`")});
  }
  d.unowned = r.strings(n, "unowned");
  for (const auto& kvp : r.map(n, "missing", false)) {
    const std::string pkg = r.scalar(kvp.first, "a package name");
    if (!kvp.second.IsSequence()) r.fail(kvp.second, "missing files of `" + pkg + "` must be a list");
    for (const auto& f : kvp.second) d.missing[pkg].push_back(r.scalar(f, "a file"));
  }
  return d;
}

}  // namespace

std::string Snapshot::to_yaml() const {
  std::string out =
      "# envlock snapshot: the conda part below is an envlock.lock document (envlock diff, envlock list\n"
      "# and envlock install read it); `snapshot:` holds the host facts, drift and pip installs.\n";
  out += to_lockfile(*this, ShadowedRecords::LeftOut).to_yaml();
  if (!out.ends_with("\n")) out += "\n";

  BlockWriter w;
  w.reserve(1 << 16);
  w.open("snapshot", false, "");
  w.kv_num("format", static_cast<std::uint64_t>(format_version));
  w.kv_bool("complete", complete());
  w.kv_nonempty("timestamp", timestamp);
  w.open("problems", problems.empty(), "[]");
  for (const auto& p : problems) {
    w.begin_item_map();
    w.kv("where", p.where);
    w.kv("message", p.message);
    w.end_item_map();
  }
  w.close();
  w.open("host", false, "");
  emit_host(w, host);
  w.close();
  w.open("environments", environments.empty(), "{}");
  for (const auto& env : environments) {
    w.open(env.name, false, "");
    w.kv("prefix", home_spelled(env.prefix));
    w.kv("platform", env.platform);
    w.open("files", env.packages.empty(), "{}");
    for (const auto& p : env.packages) w.list(p.record.name, p.files);
    w.close();
    const bool any_shadowed =
        std::any_of(env.packages.begin(), env.packages.end(), [](const CapturedPackage& p) { return !p.shadowed_by.empty(); });
    w.open("shadowed", !any_shadowed, "[]");
    for (const auto& p : env.packages) {
      if (p.shadowed_by.empty()) continue;
      nlohmann::json j;
      p.record.to_json(j);
      w.begin_item_map();
      w.kv("by", p.shadowed_by);
      json_entry(w, "record", j);
      w.end_item_map();
    }
    w.close();
    if (std::any_of(env.packages.begin(), env.packages.end(), [](const CapturedPackage& p) { return !p.repacked_sha256.empty(); })) {
      w.open("repacked", false, "");
      for (const auto& p : env.packages) {
        if (!p.repacked_sha256.empty()) w.kv(p.record.name, p.repacked_sha256);
      }
      w.close();
    }
    w.open("pip", env.pip.empty(), "[]");
    for (const auto& d : env.pip) emit_pip(w, d);
    w.close();
    w.open("drift", false, "");
    emit_drift(w, env.drift);
    w.close();
    w.close();
  }
  w.close();
  w.close();
  out += w.take();
  return out;
}

Result<Snapshot> Snapshot::parse(const std::string& text, const std::string& source) {
  YAML::Node root;
  if (auto st = yaml::check_alias_expansion(text, source); !st) return st.error();
  try {
    root = YAML::Load(text);
  } catch (const YAML::ParserException& ex) {
    return Error{ErrorKind::Parse, source + ":" + std::to_string(ex.mark.line + 1) + ":" + std::to_string(ex.mark.column + 1),
                 "not valid YAML: " + ex.msg, "", "the file may be truncated; capture the snapshot again"};
  }
  Reader r(source);
  Snapshot s;
  try {
    if (!root.IsMap() || !root["snapshot"].IsDefined()) {
      return Error{ErrorKind::Parse, source, "not an envlock snapshot (no `snapshot:` section)", "",
                   "make one with `envlock snapshot capture -o FILE`"};
    }
    int sections = 0;  // the top level; the lockfile part's keys are checked by Lockfile::parse
    for (const auto& kv : root) {
      if (kv.first.IsScalar() && kv.first.Scalar() == "snapshot" && ++sections > 1)
        r.fail(kv.first, "duplicate key `snapshot`", "keep one `snapshot:` section, or capture the snapshot again");
    }
    const YAML::Node sn = r.map(root, "snapshot");
    r.unique_keys(sn);
    const auto format = r.u64(sn["format"], "`format`");
    if (!format) r.fail(sn, "missing `format`");
    if (*format > static_cast<std::uint64_t>(kFormatVersion)) {
      r.fail(sn["format"], "snapshot format " + std::to_string(*format) + " is newer than this envlock reads (format " +
                               std::to_string(kFormatVersion) + ")",
             "upgrade envlock to read this snapshot");
    }
    s.format_version = static_cast<int>(*format);
    s.timestamp = r.s(sn, "timestamp");
    for (const auto& p : r.seq(sn, "problems")) {
      if (!p.IsMap()) r.fail(p, "a problem entry must be a mapping");
      s.problems.push_back({r.s(p, "where"), r.s(p, "message")});
    }
    const bool complete = r.boolean(sn, "complete");
    if (complete != s.problems.empty()) {
      r.fail(sn["complete"], "`complete` says " + std::string(complete ? "true" : "false") + " but " +
                                 std::to_string(s.problems.size()) + " problem(s) are listed");
    }
    s.host = read_host(r, r.map(sn, "host"));

    auto lock = Lockfile::parse(text, source);
    if (!lock) return lock.error();
    const auto envs = r.map(sn, "environments", false);
    for (const auto& kvp : envs) {
      const std::string name = r.scalar(kvp.first, "an environment name");
      const YAML::Node en = kvp.second;
      if (!en.IsMap()) r.fail(en, "environment `" + name + "` must be a mapping");
      CapturedEnvironment env;
      env.name = name;
      env.prefix = home_expanded(r.s(en, "prefix"), false);
      env.platform = r.s(en, "platform");
      if (env.prefix.empty()) r.fail(en, "environment `" + name + "` has no `prefix`", "capture the snapshot again");
      if (env.platform.empty()) r.fail(en, "environment `" + name + "` has no `platform`", "capture the snapshot again");
      const auto files = r.map(en, "files", false);
      auto le = lock->environments.find(name);
      if (le == lock->environments.end()) {
        r.fail(kvp.first, "environment `" + name + "` has no entry under the lockfile's `environments`");
      }
      auto lp = le->second.platforms.find(env.platform);
      if (lp == le->second.platforms.end()) {
        // Its packages are the lockfile part's for this platform: without them the environment
        // would read (and deploy) as empty.
        std::string have;
        for (const auto& [p, _] : le->second.platforms) have += (have.empty() ? "" : ", ") + p;
        r.fail(en["platform"], "environment `" + name + "` was captured on platform `" + env.platform +
                                   "`, which its lockfile part does not lock (it has: " + (have.empty() ? "none" : have) + ")",
               "the file was edited or damaged; capture the snapshot again");
      }
      {
        for (const auto& pkg : lp->second.packages) {
          CapturedPackage cp;
          cp.record = static_cast<const RepoDataRecord&>(pkg);
          cp.files = r.strings(files, pkg.name.c_str());
          env.packages.push_back(std::move(cp));
        }
      }
      for (const auto& sh : r.seq(en, "shadowed")) {
        if (!sh.IsMap()) r.fail(sh, "a shadowed entry must be a mapping");
        auto rec = RepoDataRecord::from_json(r.json(r.map(sh, "record")));
        if (!rec) r.fail(sh["record"], "shadowed record: " + rec.error().message);
        CapturedPackage cp;
        cp.record = std::move(*rec);
        cp.shadowed_by = r.s(sh, "by");
        cp.files = r.strings(files, cp.record.name.c_str());
        env.packages.push_back(std::move(cp));
      }
      std::sort(env.packages.begin(), env.packages.end(),
                [](const CapturedPackage& a, const CapturedPackage& b) { return a.record.name < b.record.name; });
      for (const auto& rp : r.map(en, "repacked", false)) {
        const std::string pkg = r.scalar(rp.first, "a package name");
        auto it = std::find_if(env.packages.begin(), env.packages.end(), [&](const CapturedPackage& c) { return c.record.name == pkg; });
        if (it == env.packages.end()) r.fail(rp.first, "repacked package `" + pkg + "` is not a package of environment `" + name + "`");
        it->repacked_sha256 = r.scalar(rp.second, "a sha256");
        if (!is_hex_digest(it->repacked_sha256, HashAlgorithm::Sha256)) r.fail(rp.second, "repacked `" + pkg + "`: not a sha256");
      }
      for (const auto& p : r.seq(en, "pip")) env.pip.push_back(read_pip(r, p));
      env.drift = read_drift(r, r.map(en, "drift", false));
      s.environments.push_back(std::move(env));
    }
  } catch (const Bad& bad) {
    return bad.error;
  } catch (const YAML::Exception& ex) {
    return Error{ErrorKind::Parse, source + ":" + std::to_string(ex.mark.line + 1), ex.msg, "", ""};
  }
  return s;
}

Result<Snapshot> Snapshot::read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{ErrorKind::Io, path.string(), "cannot open the snapshot", "", "check the path"};
  std::ostringstream ss;
  ss << in.rdbuf();
  return parse(ss.str(), path.string());
}

Status Snapshot::write(const fs::path& path) const { return write_file_atomic(path, to_yaml()); }

}  // namespace envlock
