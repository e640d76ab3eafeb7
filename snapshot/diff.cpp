// Differences between two snapshots: environments, conda packages, pip distributions, drift,
// host facts and system packages.
#include <algorithm>
#include <map>
#include <string>
#include <tuple>

#include "envlock/pypi_name.hpp"
#include "envlock/snapshot.hpp"

namespace envlock {

namespace {

using Kind = SnapshotChange::Kind;

void compare_maps(const std::map<std::string, std::string>& a, const std::map<std::string, std::string>& b,
                  const std::string& section, std::vector<SnapshotChange>& out) {
  for (const auto& [k, v] : a) {
    auto it = b.find(k);
    if (it == b.end()) out.push_back({Kind::Removed, section, k, v, ""});
    else if (it->second != v) out.push_back({Kind::Changed, section, k, v, it->second});
  }
  for (const auto& [k, v] : b) {
    if (!a.count(k)) out.push_back({Kind::Added, section, k, "", v});
  }
}

// Every fact capture records of the host outside its system packages and system Pythons (those
// are sections of their own): a changed fact is a change, the gate `--fail-on host-changed` reads.
std::map<std::string, std::string> host_map(const HostFacts& h) {
  std::map<std::string, std::string> m{
      {"platform", h.platform},
      {"os", h.os.id + (h.os.version_id.empty() ? "" : " " + h.os.version_id)},
      {"os codename", h.os.version_codename},
      {"os pretty name", h.os.pretty_name},
      {"kernel", h.kernel},
      {"glibc", h.glibc},
      {"libstdc++ GLIBCXX", h.libstdcxx_glibcxx},
      {"libstdc++ CXXABI", h.libstdcxx_cxxabi},
      {"cpu arch", h.cpu_arch},
      {"cpu level", h.cpu_level},
      {"page size", h.page_size ? std::to_string(*h.page_size) : ""},
      {"system package manager", h.system_package_manager},
  };
  if (h.nvidia) {
    m["nvidia driver"] = h.nvidia->driver_version;
    m["nvidia driver (nvidia-smi)"] = h.nvidia->smi_driver_version;
    m["libcuda"] = h.nvidia->libcuda_version;
    m["cuda (driver)"] = h.nvidia->cuda_version;
    std::string gpus;
    for (const auto& g : h.nvidia->gpus) {
      std::string gpu = g.name;
      std::string detail = g.architecture;
      if (!g.compute_capability.empty()) detail += (detail.empty() ? "sm " : ", sm ") + g.compute_capability;
      if (g.memory_mib) detail += (detail.empty() ? "" : ", ") + std::to_string(*g.memory_mib) + " MiB";
      if (!g.uuid.empty()) detail += (detail.empty() ? "" : ", ") + g.uuid;
      gpus += (gpus.empty() ? "" : "; ") + gpu + (detail.empty() ? "" : " (" + detail + ")");
    }
    m["gpus"] = gpus;
  }
  for (auto it = m.begin(); it != m.end();) it = it->second.empty() ? m.erase(it) : std::next(it);
  return m;
}

// "name:arch" -> version, with dpkg's status when the package is not plainly installed (a package
// removed with its configuration kept, `deinstall ok config-files`, is no longer installed).
std::map<std::string, std::string> system_map(const HostFacts& h) {
  std::map<std::string, std::string> m;
  for (const auto& p : h.system_packages) {
    const bool installed = p.status.empty() || p.status == "installed" || p.status == "install ok installed";
    m[p.name + (p.architecture.empty() ? "" : ":" + p.architecture)] = p.version + (installed ? "" : " (" + p.status + ")");
  }
  return m;
}

// "<site> <name>" -> "version [installer] (source)": the pip packages of the system Pythons.
std::map<std::string, std::string> system_python_map(const HostFacts& h) {
  std::map<std::string, std::string> m;
  for (const auto& site : h.system_python) {
    for (const auto& p : site.packages) {
      m[site.site + " " + p.name] = p.version + (p.installer.empty() ? "" : " [" + p.installer + "]") +
                                    (p.source.empty() || p.source == "index" ? "" : " (" + p.source + ")");
    }
  }
  return m;
}

std::map<std::string, std::string> conda_map(const CapturedEnvironment& e) {
  std::map<std::string, std::string> m;
  for (const auto& p : e.packages) {
    std::string v = p.record.version.to_string() + " " + p.record.build;
    if (!p.record.channel.empty()) v += " (" + p.record.channel + ")";
    // A record pip shadowed is still installed under pip's files: its loss, or pip's install
    // over it, is a change of the conda package too (the distribution is in the pip section).
    if (!p.shadowed_by.empty()) v += ", shadowed by " + p.shadowed_by;
    m[p.record.name] = v;
  }
  return m;
}

std::map<std::string, std::string> pip_map(const CapturedEnvironment& e) {
  std::map<std::string, std::string> m;
  for (const auto& d : e.pip) m[d.normalized_name()] = d.requirement() + (d.installer.empty() ? "" : " [" + d.installer + "]");
  return m;
}

// The counts, and each drifted path (so an unowned notes.txt replaced by new.txt shows, although
// the counts are equal): "modified <path>" -> what it holds now, "unowned <path>", "missing <path>".
std::map<std::string, std::string> drift_map(const CapturedEnvironment& e) {
  std::size_t missing = 0;
  for (const auto& [pkg, files] : e.drift.missing) missing += files.size();
  std::map<std::string, std::string> m{{"modified files", std::to_string(e.drift.modified.size())},
                                       {"unowned files", std::to_string(e.drift.unowned.size())},
                                       {"missing files", std::to_string(missing)}};
  for (const auto& f : e.drift.modified) {
    std::string now = f.actual_sha256.empty() ? "" : "sha256 " + f.actual_sha256;
    if (f.actual_size) now += (now.empty() ? "" : ", ") + std::to_string(*f.actual_size) + " bytes";
    m["modified " + f.path] = now.empty() ? "(" + f.owner + ")" : now + " (" + f.owner + ")";
  }
  // The name says what drifted; the value adds only what it does not ("+ missing bin/x (pkg)").
  for (const auto& path : e.drift.unowned) m["unowned " + path] = "";
  for (const auto& [pkg, files] : e.drift.missing) {
    for (const auto& path : files) m["missing " + path] = "(" + pkg + ")";
  }
  return m;
}

// Whether each side is complete, and the problems of a partial capture ("problem <where>" ->
// message), so a package missing from a partial capture is not read as removed without a word.
std::map<std::string, std::string> capture_map(const Snapshot& s) {
  std::map<std::string, std::string> m{{"complete", s.complete() ? "yes" : "no (partial capture)"}};
  for (const auto& p : s.problems) m["problem " + p.where] = p.message;
  return m;
}

// Report order: the capture first (complete, problems), the host (facts, then system packages), then the environment pairing, then
// each environment's conda packages, pip distributions and drift, environment by environment.
std::tuple<int, std::string, int> section_order(const std::string& section) {
  if (section == "capture") return {-1, "", 0};
  if (section == "host") return {0, "", 0};
  if (section == "system") return {1, "", 0};
  if (section == "system-python") return {2, "", 0};
  if (section == "environment") return {3, "", 0};
  const auto colon = section.find(':');
  const std::string kind = section.substr(0, colon), label = colon == std::string::npos ? "" : section.substr(colon + 1);
  return {4, label, kind == "conda" ? 0 : kind == "pip" ? 1 : 2};
}

std::vector<SnapshotChange> sorted(std::vector<SnapshotChange> out) {
  std::stable_sort(out.begin(), out.end(), [](const SnapshotChange& x, const SnapshotChange& y) {
    return std::tuple(section_order(x.section), x.name) < std::tuple(section_order(y.section), y.name);
  });
  return out;
}

// One environment as a lockfile, with the conda records pip shadowed (as `snapshot lock` writes
// them and the prefix still holds them), under one fixed name, so two environments are paired
// whatever their names.
Lockfile lockfile_part(const CapturedEnvironment& e) {
  Snapshot s;
  s.environments.push_back(e);
  s.environments.back().name = "env";
  return to_lockfile(s, ShadowedRecords::Kept);
}

// "re-uploaded+host-floor-raised: same URL, sha256 ab… -> cd…; __cuda >=12 (was none)"
std::string change_summary(const PackageChange& c) {
  std::string s(change_kind_name(c.kind));
  for (ChangeKind f : c.flags) s += "+" + std::string(change_kind_name(f));
  const std::string kind = std::string(change_kind_name(c.kind)) + ": ";
  for (std::size_t i = 0; i < c.notes.size(); ++i) {
    // "re-uploaded: same URL, ..." is a note that names its kind: said once.
    const std::string& note = c.notes[i];
    s += (i == 0 ? ": " : "; ") + (note.starts_with(kind) ? note.substr(kind.size()) : note);
  }
  return s;
}

std::string side_text(const std::optional<PackageSide>& side) {
  if (!side) return "";
  return side->version + (side->build.empty() ? "" : " " + side->build);
}

// The package comparison of `envlock diff` (diff_lockfiles) over the pair's lockfile parts:
// what the version/build/channel entries miss is added, a red flag they show is named.
void compare_packages(const CapturedEnvironment& a, const CapturedEnvironment& b, const std::string& label,
                      const RecordedFields& fields, std::vector<SnapshotChange>& out) {
  const LockDiff d = diff_lockfiles(lockfile_part(a), lockfile_part(b), fields, fields);
  for (const auto& g : d.groups) {
    for (const auto& c : g.changes) {
      if (c.pip_line || c.kind == ChangeKind::Added || c.kind == ChangeKind::Removed) continue;  // the entries show these
      const std::string section = (c.pypi ? "pip:" : "conda:") + label;
      const std::string name = c.pypi ? pep503_normalize(c.name) : c.name;
      auto shown = std::find_if(out.begin(), out.end(), [&](const SnapshotChange& s) {
        return s.kind == Kind::Changed && s.section == section && s.name == name;
      });
      if (shown == out.end()) {
        out.push_back({Kind::Changed, section, name, side_text(c.old_side), side_text(c.new_side) + " [" + change_summary(c) + "]"});
        continue;
      }
      const bool red = is_red_flag(c.kind) || std::any_of(c.flags.begin(), c.flags.end(), is_red_flag);
      if (red) shown->after += " [" + change_summary(c) + "]";
    }
  }
}

void compare_environments(const CapturedEnvironment& a, const CapturedEnvironment& b, const std::string& label,
                          const std::optional<RecordedFields>& package_fields, std::vector<SnapshotChange>& out) {
  if (a.prefix != b.prefix) out.push_back({Kind::Changed, "environment", label, a.prefix, b.prefix});
  compare_maps(conda_map(a), conda_map(b), "conda:" + label, out);
  compare_maps(pip_map(a), pip_map(b), "pip:" + label, out);
  if (package_fields) compare_packages(a, b, label, *package_fields, out);
  compare_maps(drift_map(a), drift_map(b), "drift:" + label, out);
}

}  // namespace

std::vector<SnapshotChange> diff_snapshots(const Snapshot& a, const Snapshot& b, const std::optional<RecordedFields>& package_fields) {
  std::vector<SnapshotChange> out;
  compare_maps(capture_map(a), capture_map(b), "capture", out);
  compare_maps(host_map(a.host), host_map(b.host), "host", out);
  compare_maps(system_map(a.host), system_map(b.host), "system", out);
  compare_maps(system_python_map(a.host), system_python_map(b.host), "system-python", out);

  // One environment on each side: they are compared whatever their names (a capture, a deploy
  // into another prefix and a capture of that), and the pairing is reported.
  if (a.environments.size() == 1 && b.environments.size() == 1 && a.environments[0].name != b.environments[0].name) {
    const auto& x = a.environments[0];
    const auto& y = b.environments[0];
    out.push_back({Kind::Changed, "environment", "compared (the only one on each side)", x.name, y.name});
    compare_environments(x, y, x.name + "->" + y.name, package_fields, out);
    return sorted(std::move(out));
  }
  std::map<std::string, const CapturedEnvironment*> ea, eb;
  for (const auto& e : a.environments) ea[e.name] = &e;
  for (const auto& e : b.environments) eb[e.name] = &e;
  for (const auto& [name, env] : ea) {
    auto it = eb.find(name);
    if (it == eb.end()) {
      out.push_back({Kind::Removed, "environment", name, env->prefix, ""});
      continue;
    }
    compare_environments(*env, *it->second, name, package_fields, out);
  }
  for (const auto& [name, env] : eb) {
    if (!ea.count(name)) out.push_back({Kind::Added, "environment", name, "", env->prefix});
  }
  return sorted(std::move(out));
}

}  // namespace envlock
