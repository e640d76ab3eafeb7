// The PyPI resolver (envlock/pypi_resolve.hpp): targets and wheel tags as packaging.tags makes
// them, and a backtracking resolver in pip's manner.
#include "envlock/pypi_resolve.hpp"

#include <algorithm>
#include <functional>
#include <set>

#include "envlock/pypi_name.hpp"
#include "envlock/text.hpp"
#include "envlock/url.hpp"
#include "envlock/wheel.hpp"

namespace envlock {

namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::size_t b = 0;
  while (true) {
    const std::size_t e = s.find(sep, b);
    out.push_back(s.substr(b, e == std::string::npos ? std::string::npos : e - b));
    if (e == std::string::npos) break;
    b = e + 1;
  }
  return out;
}

/// packaging's _manylinux.platform_tags then `linux_<arch>`.
std::vector<std::string> linux_platforms(const std::string& arch, int glibc_minor) {
  std::vector<std::string> out;
  const bool x86 = arch == "x86_64" || arch == "i686";
  const int min_minor = x86 ? 5 : 17;
  for (int minor = glibc_minor; minor >= min_minor; --minor) {
    out.push_back("manylinux_2_" + std::to_string(minor) + "_" + arch);
    if (minor == 17) out.push_back("manylinux2014_" + arch);
    if (minor == 12 && x86) out.push_back("manylinux2010_" + arch);
    if (minor == 5 && x86) out.push_back("manylinux1_" + arch);
  }
  out.push_back("linux_" + arch);
  return out;
}

/// packaging's mac_platforms, for macOS 11 and later (arm64 and x86_64).
std::vector<std::string> mac_platforms(const std::string& arch, int major, int minor) {
  std::vector<std::string> out;
  const std::vector<std::string> formats = arch == "arm64" ? std::vector<std::string>{"arm64", "universal2"}
                                                           : std::vector<std::string>{"x86_64", "intel", "fat64", "fat32", "universal2", "universal"};
  if (major >= 11) {
    for (int m = major; m >= 11; --m)
      for (const auto& f : formats) out.push_back("macosx_" + std::to_string(m) + "_0_" + f);
    if (arch == "x86_64")
      for (int m = 16; m >= 4; --m)
        for (const auto& f : formats) out.push_back("macosx_10_" + std::to_string(m) + "_" + f);
  } else {
    for (int m = minor; m >= 4; --m)
      for (const auto& f : formats) out.push_back("macosx_10_" + std::to_string(m) + "_" + f);
  }
  return out;
}

}  // namespace

Result<PypiTarget> PypiTarget::for_conda(const std::string& python_version, const std::string& python_build,
                                         const std::string& platform, const std::vector<VirtualPackage>& vps) {
  PypiTarget t;
  auto parts = split(python_version, '.');
  auto digits = [](const std::string& s) { return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos; };
  if (parts.size() < 2 || !digits(parts[0]) || !digits(parts[1]))
    return Error{ErrorKind::Usage, "python " + python_version, "the python version is not X.Y[.Z]; PyPI wheels cannot be matched", "", ""};
  const int major = std::stoi(parts[0]), minor = std::stoi(parts[1]);
  t.python_version = python_version;
  const std::string lower_build = ascii_lower(python_build);
  t.implementation = lower_build.find("pypy") != std::string::npos ? "pp" : "cp";
  const std::string xy = parts[0] + parts[1];
  const bool free_threaded = lower_build.find("_cp" + xy + "t") != std::string::npos;
  if (t.implementation == "cp") t.abis = {"cp" + xy + (free_threaded ? "t" : "")};
  else t.abis = {"pypy" + xy + "_pp73"};
  auto vp_version = [&](const std::string& name) -> std::string {
    for (const auto& v : vps)
      if (v.name == name) return v.version;
    return "";
  };
  const std::string arch_part = platform.substr(platform.find('-') + 1);
  std::string machine;
  if (platform.starts_with("linux-")) {
    const std::string arch = arch_part == "64" ? "x86_64" : arch_part == "32" ? "i686" : arch_part;
    int glibc = 17;
    const std::string g = vp_version("__glibc");
    if (auto gp = split(g, '.'); gp.size() >= 2 && digits(gp[1])) glibc = std::stoi(gp[1]);
    t.platforms = linux_platforms(arch, glibc);
    machine = arch;
    t.markers = {{"os_name", "posix"}, {"sys_platform", "linux"}, {"platform_system", "Linux"}};
  } else if (platform.starts_with("osx-")) {
    const std::string arch = arch_part == "arm64" ? "arm64" : "x86_64";
    int omaj = arch == "arm64" ? 11 : 10, omin = arch == "arm64" ? 0 : 15;
    if (auto op = split(vp_version("__osx"), '.'); !op.empty() && digits(op[0])) {
      omaj = std::stoi(op[0]);
      omin = op.size() > 1 && digits(op[1]) ? std::stoi(op[1]) : 0;
    }
    t.platforms = mac_platforms(arch, omaj, omin);
    machine = arch;
    t.markers = {{"os_name", "posix"}, {"sys_platform", "darwin"}, {"platform_system", "Darwin"}};
  } else if (platform.starts_with("win-")) {
    t.platforms = {arch_part == "64" ? "win_amd64" : arch_part == "32" ? "win32" : "win_" + arch_part};
    machine = arch_part == "64" ? "AMD64" : arch_part == "32" ? "x86" : ascii_lower(arch_part) == "arm64" ? "ARM64" : arch_part;
    t.markers = {{"os_name", "nt"}, {"sys_platform", "win32"}, {"platform_system", "Windows"}};
  } else {
    return Error{ErrorKind::Usage, platform, "PyPI packages are not locked for the platform " + platform, "",
                 "lock pypi-dependencies for linux-*, osx-* or win-* platforms"};
  }
  std::string full = python_version;
  if (parts.size() == 2) full += ".0";
  t.markers["platform_machine"] = machine;
  t.markers["python_version"] = parts[0] + "." + parts[1];
  t.markers["python_full_version"] = full;
  t.markers["implementation_name"] = t.implementation == "cp" ? "cpython" : "pypy";
  t.markers["platform_python_implementation"] = t.implementation == "cp" ? "CPython" : "PyPy";
  t.markers["implementation_version"] = full;
  t.markers["platform_release"] = "";
  t.markers["platform_version"] = "";

  // packaging.tags: cpython_tags(python_version, abis, platforms), then compatible_tags.
  const std::string interp = t.implementation + xy;
  for (const auto& abi : t.abis)
    for (const auto& p : t.platforms) t.tags.push_back(interp + "-" + abi + "-" + p);
  const bool abi3 = t.implementation == "cp" && !free_threaded && major == 3 && minor >= 2;
  if (t.implementation == "cp") {
    if (abi3)
      for (const auto& p : t.platforms) t.tags.push_back(interp + "-abi3-" + p);
    for (const auto& p : t.platforms) t.tags.push_back(interp + "-none-" + p);
    if (abi3)
      for (int m = minor - 1; m >= 2; --m)
        for (const auto& p : t.platforms) t.tags.push_back("cp" + parts[0] + std::to_string(m) + "-abi3-" + p);
  } else {
    for (const auto& p : t.platforms) t.tags.push_back(interp + "-none-" + p);
  }
  std::vector<std::string> py_range{"py" + xy, "py" + parts[0]};
  for (int m = minor - 1; m >= 0; --m) py_range.push_back("py" + parts[0] + std::to_string(m));
  for (const auto& v : py_range)
    for (const auto& p : t.platforms) t.tags.push_back(v + "-none-" + p);
  t.tags.push_back(interp + "-none-any");
  for (const auto& v : py_range) t.tags.push_back(v + "-none-any");
  return t;
}

std::optional<std::size_t> PypiTarget::tag_priority(const std::string& py, const std::string& abi, const std::string& plat) const {
  std::optional<std::size_t> best;
  for (const auto& x : split(py, '.'))
    for (const auto& a : split(abi, '.'))
      for (const auto& p : split(plat, '.')) {
        const std::string tag = x + "-" + a + "-" + p;
        auto it = std::find(tags.begin(), tags.end(), tag);
        if (it == tags.end()) continue;
        const std::size_t i = static_cast<std::size_t>(it - tags.begin());
        if (!best || i < *best) best = i;
      }
  return best;
}

std::optional<CondaProvided> conda_pypi_provides(const PackageRecord& r) {
  static const std::map<std::string, std::string> kRenamed{
      {"pytorch", "torch"}, {"pytorch-cpu", "torch"}, {"pytorch-gpu", "torch"}, {"py-opencv", "opencv-python"},
      {"matplotlib-base", "matplotlib"}, {"msgpack-python", "msgpack"}, {"python-xxhash", "xxhash"},
      {"py-xgboost", "xgboost"}, {"python-flatbuffers", "flatbuffers"}, {"python-graphviz", "graphviz"},
      {"tensorflow-base", "tensorflow"}, {"pyqt", "pyqt5"}, {"python-kubernetes", "kubernetes"},
      {"py-lief", "lief"}, {"python-lmdb", "lmdb"}, {"pytables", "tables"}, {"python-duckdb", "duckdb"},
      {"jax-jumpy", "jumpy"}, {"ruamel_yaml", "ruamel.yaml"}, {"pywin32-on-windows", "pywin32"}};
  static const std::set<std::string> kNotPython{"python", "python_abi", "pip-tools-placeholder"};
  if (kNotPython.count(r.name)) return std::nullopt;
  bool python = r.noarch == NoArchKind::Python;
  for (const auto& d : r.depends) {
    const std::string n = d.substr(0, d.find_first_of(" =<>!~"));
    python = python || n == "python";
  }
  if (!python) return std::nullopt;
  auto it = kRenamed.find(r.name);
  return CondaProvided{pep503_normalize(it == kRenamed.end() ? r.name : it->second), r.version.to_string(), r.name};
}

// ---- the resolver ----

namespace {

const std::string kManifest = "(manifest)";

struct Candidate {
  std::string version_text;
  Pep440Version version;
  std::optional<PypiFile> file;  ///< none for a conda-provided project
  std::optional<CoreMetadata> metadata;
};

struct Dependency {
  std::string id;  ///< name or name[extra]
  Pep440SpecifierSet spec;
  std::optional<std::string> exact;  ///< the base of an extra: this version exactly
  std::string text;                  ///< the requirement as written, for messages
};

struct Criterion {
  Pep440SpecifierSet spec;
  std::optional<std::string> exact;
  std::vector<std::pair<std::string, std::string>> info;  ///< (parent, requirement text)
  bool pinned_op = false;  ///< some clause is == or ===
  bool unfree = false;
  double depth = 1e9;
  std::size_t requested_order = SIZE_MAX;
};

struct State {
  std::map<std::string, Criterion> criteria;
  std::map<std::string, Candidate> pins;
};

std::string base_of(const std::string& id) { return id.substr(0, id.find('[')); }
std::string extra_of(const std::string& id) {
  const std::size_t b = id.find('[');
  return b == std::string::npos ? "" : id.substr(b + 1, id.size() - b - 2);
}

bool satisfies(const Candidate& c, const Criterion& cr) {
  if (cr.exact && c.version_text != *cr.exact) return false;
  return cr.spec.contains(c.version, true);
}

class Resolver {
 public:
  Resolver(const PypiResolveInput& in, PypiIndex& index) : in_(in), index_(index) {
    for (const auto& c : in.conda) conda_[c.name] = c;
  }

  Result<PypiResolution> run() {
    State s;
    std::size_t order = 0;
    for (const auto& r : in_.requests) {
      if (!r.requirement.applies(in_.target.markers)) continue;
      if (!r.requirement.url.empty())
        return Error{ErrorKind::Usage, r.origin, "'" + r.text + "' is a direct reference; pypi-dependencies resolve index names only", "",
                     "list it under a `pip:` list to carry it as written, or publish the wheel to an index or a find-links folder"};
      for (const auto& d : deps_of_requirement(r.requirement, r.text)) {
        Criterion& cr = add(s, kManifest, d, 0.0);
        cr.requested_order = std::min(cr.requested_order, order);
      }
      ++order;
    }
    auto done = solve(s);
    if (!done) return done.error();
    PypiResolution out;
    for (const auto& [id, c] : done->pins) {
      if (id.find('[') != std::string::npos) continue;
      if (!c.file) {
        out.from_conda.push_back(conda_.at(id));
        continue;
      }
      PypiPin pin;
      pin.name = id;
      pin.version = c.version_text;
      pin.file = *c.file;
      pin.metadata = *c.metadata;
      std::set<std::string> by;
      for (const auto& [cid, cr] : done->criteria)
        if (base_of(cid) == id)
          for (const auto& [parent, text] : cr.info)
            if (parent != id) by.insert(parent);
      pin.required_by.assign(by.begin(), by.end());
      out.pins.push_back(std::move(pin));
    }
    return out;
  }

 private:
  std::vector<Dependency> deps_of_requirement(const Pep508Requirement& r, const std::string& text) {
    std::vector<Dependency> out;
    const std::string n = r.normalized_name();
    out.push_back({n, r.specifier, std::nullopt, text});
    for (const auto& e : r.extras) out.push_back({n + "[" + e + "]", r.specifier, std::nullopt, text});
    return out;
  }

  Criterion& add(State& s, const std::string& parent, const Dependency& d, double parent_depth) {
    Criterion& cr = s.criteria[d.id];
    cr.spec.add(d.spec);
    if (d.exact) cr.exact = d.exact;
    cr.info.emplace_back(parent, d.text);
    for (const auto& c : d.spec.clauses()) {
      cr.unfree = true;
      if (c.op().starts_with("==")) cr.pinned_op = true;
    }
    cr.depth = std::min(cr.depth, parent_depth + 1.0);
    return cr;
  }

  /// The next identifier to pin, as pip's get_preference orders them.
  std::optional<std::string> pick(const State& s) {
    std::optional<std::string> best;
    auto key = [&](const std::string& id) {
      const Criterion& c = s.criteria.at(id);
      return std::make_tuple(!c.pinned_op, c.depth, c.requested_order, !c.unfree, id);
    };
    for (const auto& [id, cr] : s.criteria) {
      if (s.pins.count(id)) continue;
      const std::string base = base_of(id);
      if (base != id && !s.pins.count(base)) continue;  // an extra waits for its project
      if (!best || key(id) < key(*best)) best = id;
    }
    return best;
  }

  struct Failure {
    std::string id;
    std::string reason;
    std::vector<std::pair<std::string, std::string>> info;
  };

  Error failure_error(const Failure& f) {
    std::string detail;
    for (const auto& [parent, text] : f.info)
      detail += (detail.empty() ? "" : "\n") + std::string("  ") + text + "  (required by " + (parent == kManifest ? "the manifest" : parent) + ")";
    return Error{ErrorKind::Unsatisfiable, f.id, f.reason, detail,
                 f.reason.find("sdist") != std::string::npos
                     ? "envlock installs wheels only (as pip --only-binary=:all:): pin a version that has a wheel, or build one into a find-links folder"
                     : "relax the requirements named above, or add an index or find-links folder that has a fitting wheel"};
  }

  Result<std::vector<Candidate>> candidates(const std::string& id, const State& s, Failure& why) {
    const Criterion& cr = s.criteria.at(id);
    const std::string base = base_of(id);
    std::vector<Candidate> out;
    if (base != id) {  // an extra: its project's pin
      out.push_back(s.pins.at(base));
      return out;
    }
    if (auto c = conda_.find(id); c != conda_.end()) {
      Candidate cand;
      cand.version_text = c->second.version;
      auto v = Pep440Version::parse(c->second.version);
      if (v && satisfies(Candidate{c->second.version, *v, {}, {}}, cr)) {
        cand.version = *v;
        out.push_back(cand);
        return out;
      }
      why = {id, "the conda package " + c->second.conda_name + " " + c->second.version + " provides " + id +
                     " and does not satisfy the requirements on it", cr.info};
      return out;
    }
    auto files = index_.files(id);
    if (!files) return files.error();
    // Versions -> the best file of each (wheels the target can use; Requires-Python met).
    struct Best {
      std::string text;
      const PypiFile* file = nullptr;
      std::size_t priority = 0;
      std::string build;
      bool all_yanked = true;
    };
    std::map<Pep440Version, Best> by_version;
    std::vector<std::string> sdists;
    std::size_t wheels = 0;
    auto python = Pep440Version::parse(in_.target.markers.at("python_full_version"));
    bool any_yanked_only = true;
    for (const auto& f : *files) {
      if (!f.filename.ends_with(".whl")) {
        sdists.push_back(f.filename);
        continue;
      }
      auto wn = parse_wheel_file_name(f.filename);
      if (!wn) continue;
      ++wheels;
      auto v = Pep440Version::parse(wn->version);
      if (!v) continue;
      auto pri = in_.target.tag_priority(wn->python_tag, wn->abi_tag, wn->platform_tag);
      if (!pri) continue;
      if (!f.requires_python.empty()) {
        auto rp = Pep440SpecifierSet::parse(f.requires_python);
        if (rp && python && !rp->contains(*python)) continue;
      }
      if (!f.yanked) any_yanked_only = false;
      Best& b = by_version[*v];
      const bool better = b.file == nullptr || (b.file->yanked && !f.yanked) ||
                          (b.file->yanked == f.yanked && (*pri < b.priority || (*pri == b.priority && wn->build_tag > b.build)));
      if (!f.yanked) b.all_yanked = false;
      if (better) {
        b.text = wn->version;
        b.file = &f;
        b.priority = *pri;
        b.build = wn->build_tag;
      }
    }
    std::vector<Pep440Version> versions;
    for (const auto& [v, b] : by_version)
      if (any_yanked_only || !b.all_yanked) versions.push_back(v);
    std::reverse(versions.begin(), versions.end());
    std::vector<Pep440Version> fit = cr.spec.filter(versions);
    // A previous lock's version first, when it still fits.
    if (auto p = in_.preferred.find(id); p != in_.preferred.end()) {
      auto pv = Pep440Version::parse(p->second);
      if (pv) {
        auto it = std::find(fit.begin(), fit.end(), *pv);
        if (it != fit.end()) std::rotate(fit.begin(), it, it + 1);
      }
    }
    for (const auto& v : fit) {
      const Best& b = by_version.at(v);
      if (cr.exact && b.text != *cr.exact) continue;
      Candidate c{b.text, v, *b.file, std::nullopt};
      out.push_back(std::move(c));
    }
    if (out.empty()) {
      std::string reason;
      if (files->empty()) reason = "no index or find-links location lists a project named '" + id + "'";
      else if (wheels == 0) reason = id + " has only sdists (" + sdists.front() + (sdists.size() > 1 ? ", ..." : "") +
                                     "): envlock installs wheels only";
      else if (by_version.empty()) reason = "no wheel of " + id + " fits python " + in_.target.python_version + " on " +
                                            (in_.target.platforms.empty() ? "" : in_.target.platforms.front()) + " (tags, Requires-Python)";
      else {
        std::string listed;
        for (auto it = by_version.rbegin(); it != by_version.rend(); ++it) listed += (listed.empty() ? "" : ", ") + it->second.text;
        reason = "no version of " + id + " fits " + (cr.spec.empty() ? std::string("the requirements") : "'" + cr.spec.to_string() + "'") +
                 "; versions with a wheel for the target: " + listed;
        if (!sdists.empty()) reason += " (other versions have only sdists)";
      }
      why = {id, reason, cr.info};
    }
    return out;
  }

  Result<std::vector<Dependency>> dependencies(const std::string& id, Candidate& c) {
    std::vector<Dependency> out;
    const std::string base = base_of(id);
    const std::string extra = extra_of(id);
    if (!c.file) return out;  // a conda package: conda carries its dependencies
    if (base != id) out.push_back({base, {}, c.version_text, base + "==" + c.version_text});
    if (!c.metadata) {
      auto m = index_.metadata(*c.file);
      if (!m) return m.error();
      c.metadata = *m;
    }
    for (const auto& text : c.metadata->requires_dist) {
      auto r = Pep508Requirement::parse(text);
      if (!r) continue;  // pip skips (warns about) a Requires-Dist it cannot parse
      bool on = false;
      if (extra.empty()) on = r->applies(in_.target.markers, "");
      else on = r->applies(in_.target.markers, extra) && !r->applies(in_.target.markers, "");
      if (!on) continue;
      if (!r->url.empty()) continue;  // a direct reference in metadata: not from an index
      for (auto& d : deps_of_requirement(*r, text)) out.push_back(std::move(d));
    }
    return out;
  }

  Result<std::optional<State>> solve_step(State s) {
    auto id = pick(s);
    if (!id) return std::optional<State>(std::move(s));
    Failure why;
    auto cands = candidates(*id, s, why);
    if (!cands) return cands.error();
    if (cands->empty()) {
      if (!failure_) failure_ = why;
      return std::optional<State>();
    }
    const double depth = s.criteria.at(*id).depth;
    for (auto& c : *cands) {
      if (++steps_ > in_.max_steps)
        return Error{ErrorKind::Unsatisfiable, *id, "the PyPI resolution tried " + std::to_string(in_.max_steps) +
                                                        " candidates without an answer", "",
                     "pin the projects that move (name==version) to shorten the search"};
      // The Requires-Python of the metadata (pip's RequiresPythonRequirement).
      auto deps = dependencies(*id, c);
      if (!deps) return deps.error();
      if (c.metadata && !c.metadata->requires_python.empty()) {
        auto rp = Pep440SpecifierSet::parse(c.metadata->requires_python);
        auto py = Pep440Version::parse(in_.target.markers.at("python_full_version"));
        if (rp && py && !rp->contains(*py)) continue;
      }
      State next = s;
      next.pins[*id] = c;
      bool ok = true;
      Failure conflict;
      for (const auto& d : *deps) {
        Criterion& cr = add(next, *id, d, depth);
        if (auto p = next.pins.find(d.id); p != next.pins.end() && !satisfies(p->second, cr)) {
          ok = false;
          conflict = {d.id, "the requirements on " + d.id + " conflict: " + d.id + " " + p->second.version_text +
                                " was chosen, then " + *id + " " + c.version_text + " asks for '" + d.text + "'",
                      cr.info};
          break;
        }
      }
      if (!ok) {
        if (!failure_) failure_ = conflict;
        continue;
      }
      auto r = solve_step(std::move(next));
      if (!r) return r.error();
      if (*r) return r;
    }
    return std::optional<State>();
  }

  Result<State> solve(State s) {
    auto r = solve_step(std::move(s));
    if (!r) return r.error();
    if (!*r) {
      if (failure_) return failure_error(*failure_);
      return Error{ErrorKind::Unsatisfiable, "", "the PyPI requirements cannot be met together", "", ""};
    }
    return std::move(**r);
  }

  const PypiResolveInput& in_;
  PypiIndex& index_;
  std::map<std::string, CondaProvided> conda_;
  std::optional<Failure> failure_;
  std::size_t steps_ = 0;
};

}  // namespace

Result<PypiResolution> resolve_pypi(const PypiResolveInput& input, PypiIndex& index) {
  Resolver r(input, index);
  return r.run();
}

}  // namespace envlock
