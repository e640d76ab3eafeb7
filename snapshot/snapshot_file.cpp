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
#include <regex>
#include <sstream>
#include <yaml-cpp/yaml.h>

#include "envlock/hash.hpp"
#include "envlock/snapshot.hpp"

namespace envlock {

namespace fs = std::filesystem;

namespace {

// ----- writing ---------------------------------------------------------------------------------

// Strings a YAML reader would take for a number, boolean or null are double-quoted, so every
// YAML library reads them back as strings ("1.0", "yes", "null").
bool looks_typed(const std::string& s) {
  static const std::regex typed(
      R"(^([-+]?(\.[0-9]+|[0-9][0-9_]*(\.[0-9_]*)?)([eE][-+]?[0-9]+)?|[-+]?\.(inf|Inf|INF)|\.(nan|NaN|NAN)|0x[0-9a-fA-F]+|0o[0-7]+|[Yy]|[Nn]|[Yy]es|YES|[Nn]o|NO|[Tt]rue|TRUE|[Ff]alse|FALSE|[Oo]n|ON|[Oo]ff|OFF|~|[Nn]ull|NULL)$)");
  return s.empty() || std::regex_match(s, typed);
}

YAML::Emitter& str(YAML::Emitter& e, const std::string& s) {
  if (looks_typed(s)) e << YAML::DoubleQuoted;
  return e << s;
}

void kv(YAML::Emitter& e, const char* key, const std::string& value) {
  e << YAML::Key << key << YAML::Value;
  str(e, value);
}

void kv_nonempty(YAML::Emitter& e, const char* key, const std::string& value) {
  if (!value.empty()) kv(e, key, value);
}

void strings(YAML::Emitter& e, const char* key, const std::vector<std::string>& values) {
  e << YAML::Key << key << YAML::Value << YAML::BeginSeq;
  for (const auto& v : values) str(e, v);
  e << YAML::EndSeq;
}

// A JSON value as YAML with every string double-quoted, so the reverse mapping is exact.
void emit_json(YAML::Emitter& e, const nlohmann::json& j) {
  if (j.is_object()) {
    e << YAML::BeginMap;
    for (auto it = j.begin(); it != j.end(); ++it) {
      e << YAML::Key << it.key() << YAML::Value;
      emit_json(e, it.value());
    }
    e << YAML::EndMap;
  } else if (j.is_array()) {
    e << YAML::Flow << YAML::BeginSeq;
    for (const auto& v : j) emit_json(e, v);
    e << YAML::EndSeq;
  } else if (j.is_string()) {
    e << YAML::DoubleQuoted << j.get<std::string>();
  } else if (j.is_null()) {
    e << YAML::Null;
  } else {
    e << j.dump();  // numbers and booleans
  }
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

void emit_host(YAML::Emitter& e, const HostFacts& h) {
  e << YAML::BeginMap;
  kv(e, "platform", h.platform);
  e << YAML::Key << "os" << YAML::Value << YAML::BeginMap;
  kv(e, "id", h.os.id);
  kv(e, "version-id", h.os.version_id);
  kv(e, "version-codename", h.os.version_codename);
  kv(e, "pretty-name", h.os.pretty_name);
  e << YAML::EndMap;
  kv(e, "kernel", h.kernel);
  kv(e, "glibc", h.glibc);
  e << YAML::Key << "libstdcxx" << YAML::Value << YAML::BeginMap;
  kv(e, "glibcxx", h.libstdcxx_glibcxx);
  kv(e, "cxxabi", h.libstdcxx_cxxabi);
  e << YAML::EndMap;
  e << YAML::Key << "cpu" << YAML::Value << YAML::BeginMap;
  kv(e, "arch", h.cpu_arch);
  kv(e, "level", h.cpu_level);
  e << YAML::EndMap;
  if (h.page_size) e << YAML::Key << "page-size" << YAML::Value << *h.page_size;
  if (h.nvidia) {
    e << YAML::Key << "nvidia" << YAML::Value << YAML::BeginMap;
    kv(e, "driver", h.nvidia->driver_version);
    kv(e, "cuda", h.nvidia->cuda_version);
    e << YAML::Key << "gpus" << YAML::Value << YAML::BeginSeq;
    for (const auto& g : h.nvidia->gpus) {
      e << YAML::BeginMap;
      kv(e, "name", g.name);
      kv_nonempty(e, "architecture", g.architecture);
      kv_nonempty(e, "compute-capability", g.compute_capability);
      if (g.memory_mib) e << YAML::Key << "memory-mib" << YAML::Value << *g.memory_mib;
      kv_nonempty(e, "uuid", g.uuid);
      e << YAML::EndMap;
    }
    e << YAML::EndSeq << YAML::EndMap;
  }
  if (!h.system_package_manager.empty()) {
    e << YAML::Key << "system-packages" << YAML::Value << YAML::BeginMap;
    kv(e, "manager", h.system_package_manager);
    e << YAML::Key << "packages" << YAML::Value << YAML::BeginSeq;
    for (const auto& p : h.system_packages) {
      e << YAML::Flow << YAML::BeginSeq;
      str(e, p.name);
      str(e, p.version);
      str(e, p.architecture);
      str(e, p.status);
      e << YAML::EndSeq;
    }
    e << YAML::EndSeq << YAML::EndMap;
  }
  e << YAML::EndMap;
}

void emit_pip(YAML::Emitter& e, const PipDistribution& d) {
  e << YAML::BeginMap;
  kv(e, "name", d.name);
  kv(e, "version", d.version);
  kv(e, "installer", d.installer);
  kv(e, "source", source_name(d.source));
  kv_nonempty(e, "url", d.url);
  kv_nonempty(e, "vcs", d.vcs);
  kv_nonempty(e, "commit-id", d.commit_id);
  kv_nonempty(e, "requested-revision", d.requested_revision);
  kv_nonempty(e, "archive-sha256", d.archive_sha256);
  kv(e, "dist-info", d.dist_info);
  kv_nonempty(e, "shadows", d.shadows);
  if (!d.wheel_tags.empty()) strings(e, "wheel-tags", d.wheel_tags);
  e << YAML::Key << "record" << YAML::Value << YAML::BeginSeq;
  for (const auto& f : d.files) {
    e << YAML::Flow << YAML::BeginSeq;
    str(e, f.path);
    str(e, f.sha256);
    if (f.size) e << *f.size;
    else e << YAML::Null;
    e << YAML::EndSeq;
  }
  e << YAML::EndSeq << YAML::EndMap;
}

void emit_drift(YAML::Emitter& e, const Drift& d) {
  e << YAML::BeginMap;
  e << YAML::Key << "hashed" << YAML::Value << d.hashed;
  e << YAML::Key << "modified" << YAML::Value << YAML::BeginSeq;
  for (const auto& m : d.modified) {
    e << YAML::BeginMap;
    kv(e, "path", m.path);
    kv(e, "owner", m.owner);
    kv_nonempty(e, "expected-sha256", m.expected_sha256);
    kv_nonempty(e, "actual-sha256", m.actual_sha256);
    if (m.expected_size) e << YAML::Key << "expected-size" << YAML::Value << *m.expected_size;
    if (m.actual_size) e << YAML::Key << "actual-size" << YAML::Value << *m.actual_size;
    e << YAML::EndMap;
  }
  e << YAML::EndSeq;
  strings(e, "unowned", d.unowned);
  e << YAML::Key << "missing" << YAML::Value << YAML::BeginMap;
  for (const auto& [pkg, files] : d.missing) strings(e, pkg.c_str(), files);
  e << YAML::EndMap << YAML::EndMap;
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
  return h;
}

PipDistribution read_pip(const Reader& r, const YAML::Node& n) {
  if (!n.IsMap()) r.fail(n, "a pip entry must be a mapping");
  PipDistribution d;
  d.name = r.s(n, "name");
  d.version = r.s(n, "version");
  if (d.name.empty() || d.version.empty()) r.fail(n, "a pip entry needs a name and a version");
  d.installer = r.s(n, "installer");
  if (n["source"].IsDefined()) d.source = parse_source(r, n["source"]);
  d.url = r.s(n, "url");
  d.vcs = r.s(n, "vcs");
  d.commit_id = r.s(n, "commit-id");
  d.requested_revision = r.s(n, "requested-revision");
  d.archive_sha256 = r.s(n, "archive-sha256");
  d.dist_info = r.s(n, "dist-info");
  d.shadows = r.s(n, "shadows");
  d.wheel_tags = r.strings(n, "wheel-tags");
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

// Blanks the lines of the top-level `snapshot:` block so the rest is a plain envlock.lock document
// with its line numbers intact.
std::string without_snapshot_section(const std::string& text) {
  std::istringstream in(text);
  std::string out, line;
  bool inside = false;
  while (std::getline(in, line)) {
    const bool top_level = !line.empty() && line[0] != ' ' && line[0] != '\t' && line[0] != '#' && line[0] != '-';
    if (top_level) inside = line.starts_with("snapshot:");
    if (!inside) out += line;
    out += '\n';
  }
  return out;
}

}  // namespace

std::string Snapshot::to_yaml() const {
  std::string out =
      "# envlock snapshot: the conda part below is an envlock.lock document (envlock diff, envlock list\n"
      "# and envlock install read it); `snapshot:` holds the host facts, drift and pip installs.\n";
  out += to_lockfile(*this).to_yaml();
  if (!out.ends_with("\n")) out += "\n";

  YAML::Emitter e;
  e << YAML::BeginMap << YAML::Key << "snapshot" << YAML::Value << YAML::BeginMap;
  e << YAML::Key << "format" << YAML::Value << format_version;
  e << YAML::Key << "complete" << YAML::Value << complete();
  kv_nonempty(e, "timestamp", timestamp);
  e << YAML::Key << "problems" << YAML::Value << YAML::BeginSeq;
  for (const auto& p : problems) {
    e << YAML::BeginMap;
    kv(e, "where", p.where);
    kv(e, "message", p.message);
    e << YAML::EndMap;
  }
  e << YAML::EndSeq;
  e << YAML::Key << "host" << YAML::Value;
  emit_host(e, host);
  e << YAML::Key << "environments" << YAML::Value << YAML::BeginMap;
  for (const auto& env : environments) {
    e << YAML::Key << env.name << YAML::Value << YAML::BeginMap;
    kv(e, "prefix", env.prefix);
    kv(e, "platform", env.platform);
    e << YAML::Key << "files" << YAML::Value << YAML::BeginMap;
    for (const auto& p : env.packages) strings(e, p.record.name.c_str(), p.files);
    e << YAML::EndMap;
    e << YAML::Key << "shadowed" << YAML::Value << YAML::BeginSeq;
    for (const auto& p : env.packages) {
      if (p.shadowed_by.empty()) continue;
      nlohmann::json j;
      p.record.to_json(j);
      e << YAML::BeginMap;
      kv(e, "by", p.shadowed_by);
      e << YAML::Key << "record" << YAML::Value;
      emit_json(e, j);
      e << YAML::EndMap;
    }
    e << YAML::EndSeq;
    if (std::any_of(env.packages.begin(), env.packages.end(), [](const CapturedPackage& p) { return !p.repacked_sha256.empty(); })) {
      e << YAML::Key << "repacked" << YAML::Value << YAML::BeginMap;
      for (const auto& p : env.packages) {
        if (!p.repacked_sha256.empty()) kv(e, p.record.name.c_str(), p.repacked_sha256);
      }
      e << YAML::EndMap;
    }
    e << YAML::Key << "pip" << YAML::Value << YAML::BeginSeq;
    for (const auto& d : env.pip) emit_pip(e, d);
    e << YAML::EndSeq;
    e << YAML::Key << "drift" << YAML::Value;
    emit_drift(e, env.drift);
    e << YAML::EndMap;
  }
  e << YAML::EndMap;
  e << YAML::EndMap << YAML::EndMap;
  out += e.c_str();
  out += "\n";
  return out;
}

Result<Snapshot> Snapshot::parse(const std::string& text, const std::string& source) {
  YAML::Node root;
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
    const YAML::Node sn = r.map(root, "snapshot");
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

    auto lock = Lockfile::parse(without_snapshot_section(text), source);
    if (!lock) return lock.error();
    const auto envs = r.map(sn, "environments", false);
    for (const auto& kvp : envs) {
      const std::string name = r.scalar(kvp.first, "an environment name");
      const YAML::Node en = kvp.second;
      if (!en.IsMap()) r.fail(en, "environment `" + name + "` must be a mapping");
      CapturedEnvironment env;
      env.name = name;
      env.prefix = r.s(en, "prefix");
      env.platform = r.s(en, "platform");
      const auto files = r.map(en, "files", false);
      auto le = lock->environments.find(name);
      if (le == lock->environments.end()) {
        r.fail(kvp.first, "environment `" + name + "` has no entry under the lockfile's `environments`");
      }
      auto lp = le->second.platforms.find(env.platform);
      if (lp != le->second.platforms.end()) {
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

Status Snapshot::write(const fs::path& path) const {
  const std::string text = to_yaml();
  const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  std::string tmpl = (dir / ("." + path.filename().string() + ".XXXXXX")).string();
  const int fd = mkstemp(tmpl.data());
  if (fd < 0) return Error{ErrorKind::Io, path.string(), std::string("cannot create a temporary file: ") + std::strerror(errno), "", ""};
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = std::strerror(errno);
      ::close(fd);
      ::unlink(tmpl.c_str());
      return Error{ErrorKind::Io, path.string(), "cannot write the snapshot: " + why, "", ""};
    }
    done += static_cast<std::size_t>(n);
  }
  ::fchmod(fd, 0644);
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    ::unlink(tmpl.c_str());
    return Error{ErrorKind::Io, path.string(), std::string("cannot flush the snapshot: ") + std::strerror(errno), "", ""};
  }
  if (::rename(tmpl.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(tmpl.c_str());
    return Error{ErrorKind::Io, path.string(), "cannot move the snapshot into place: " + why, "", ""};
  }
  return ok_status();
}

}  // namespace envlock
