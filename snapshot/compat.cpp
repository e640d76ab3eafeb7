// Can a target run a captured environment? Platform, the virtual-package requirements of every
// record (__glibc, __cuda, __linux, __archspec, __osx, __win), manylinux tags of pip wheels (PEP 600),
// and the system libstdc++ when the environment ships none.
#include <algorithm>
#include <regex>
#include <set>

#include "text_util.hpp"
#include "envlock/install.hpp"
#include "envlock/snapshot.hpp"
#include "envlock/snapshot_deploy.hpp"
#include "envlock/version.hpp"
#include "envlock/virtual_packages.hpp"

namespace envlock {

namespace {

std::string numeric_kernel(const std::string& release) {
  std::size_t end = 0;
  while (end < release.size() && (std::isdigit(static_cast<unsigned char>(release[end])) || release[end] == '.')) ++end;
  std::string k = release.substr(0, end);
  while (!k.empty() && k.back() == '.') k.pop_back();
  return k;
}

using snapshot_detail::x86_level_number;

// conda-forge's `_x86_64-microarch-level` metapackage: version N means the package set was built
// for x86_64_vN. A record of that name, or a depends on it ("_x86_64-microarch-level >=3"), needs
// that level; 0 when neither says so.
constexpr std::string_view kMicroarchLevelPackage = "_x86_64-microarch-level";

int microarch_level_needed(const std::string& spec_or_version) {
  std::size_t i = 0;
  while (i < spec_or_version.size() && !std::isdigit(static_cast<unsigned char>(spec_or_version[i]))) ++i;
  const int n = i < spec_or_version.size() ? spec_or_version[i] - '0' : 0;
  return n >= 1 && n <= 4 ? n : 0;
}


// "3.11" of the environment's python record; empty without one.
std::string env_python_minor(const CapturedEnvironment& env) {
  for (const auto& p : env.packages) {
    if (p.record.name != "python") continue;
    const std::string v = p.record.version.to_string();
    const auto dot = v.find('.');
    const auto dot2 = dot == std::string::npos ? std::string::npos : v.find('.', dot + 1);
    return v.substr(0, dot2);
  }
  return "";
}

// "cp311" -> "3.11", "cp39" -> "3.9"; empty for other interpreter tags.
std::string cpython_minor(std::string_view interp) {
  if (!interp.starts_with("cp") || interp.size() < 4) return "";
  for (char c : interp.substr(2))
    if (!std::isdigit(static_cast<unsigned char>(c))) return "";
  return std::string(1, interp[2]) + "." + std::string(interp.substr(3));
}

std::vector<std::string> split_on(std::string_view s, char sep) {
  std::vector<std::string> out;
  for (std::size_t start = 0;;) {
    const auto at = s.find(sep, start);
    out.emplace_back(s.substr(start, at == std::string_view::npos ? std::string_view::npos : at - start));
    if (at == std::string_view::npos) return out;
    start = at + 1;
  }
}

// Whether one wheel tag (PEP 425 "python-abi-platform", each part possibly a '.'-compressed set)
// can run on a Linux target with `arch`, `glibc` and CPython `python` ("" unknown): the platform
// is `any`, `linux_<arch>` or a manylinux tag (its glibc floor and architecture are checked
// below, as before); musllinux needs musl, macosx/win/others another OS. The interpreter is a
// `py*` tag, the environment's `cpXY`, or `cpXY` with the `abi3` ABI for X.Y up to the
// environment's (packaging.tags: cpython_tags). Unknown interpreters (pp, ...) are not refused.
bool wheel_tag_fits(const std::string& tag, const std::string& arch, const std::string& python) {
  const auto parts = split_on(tag, '-');
  if (parts.size() != 3) return true;  // not a wheel tag: not ours to refuse
  auto platform_fits = [&](const std::string& plat) {
    if (plat == "any") return true;
    if (plat.starts_with("manylinux")) return true;  // its glibc floor and architecture: checked below
    if (plat.starts_with("linux_")) return plat == "linux_" + arch;
    return false;  // musllinux_*, macosx_*, win*, android_*, ios_*, ...
  };
  auto interp_fits = [&](const std::string& interp, const std::string& abi) {
    if (interp.starts_with("py") || python.empty()) return true;
    const std::string cp = cpython_minor(interp);
    if (cp.empty()) return !interp.starts_with("cp");
    if (cp == python) return true;
    return abi == "abi3" && compare_dotted(cp, python) <= 0;
  };
  for (const auto& plat : split_on(parts[2], '.')) {
    if (!platform_fits(plat)) continue;
    for (const auto& interp : split_on(parts[0], '.'))
      for (const auto& abi : split_on(parts[1], '.'))
        if (interp_fits(interp, abi)) return true;
  }
  return false;
}

// A pip wheel none of whose tags runs on the target (a Windows, macOS or musllinux wheel on a
// glibc Linux host, a cp313 wheel in a Python 3.11 environment) is one failed requirement.
template <typename Fail>
void check_wheel_tags(const PipDistribution& d, const HostFacts& target, const std::string& python, Fail& fail) {
  if (d.wheel_tags.empty() || !target.platform.starts_with("linux-")) return;
  for (const auto& tag : d.wheel_tags)
    if (wheel_tag_fits(tag, target.cpu_arch, python)) return;
  std::string tags;
  for (const auto& tag : d.wheel_tags) tags += (tags.empty() ? "" : ", ") + tag;
  fail("a wheel this host runs (tags " + tags + ")", "pip:" + d.name + " " + d.version,
       target.platform + " (" + target.cpu_arch + (python.empty() ? "" : ", Python " + python) + ")");
}

}  // namespace

std::string FailedRequirement::to_string() const {
  return needed_by + " needs " + requirement + "; the target has " + (target_has.empty() ? "none" : target_has);
}

namespace {

// The virtual packages `envlock install` would detect on `target` (detect_virtual_packages:
// CONDA_OVERRIDE_* applied to the target's kernel, glibc, CPU level and CUDA version).
Result<std::vector<VirtualPackage>> install_virtuals(const HostFacts& target) {
  Host probe;
  probe.getenv = Host::system().getenv;
  if (!target.kernel.empty()) probe.kernel_release = [&] { return target.kernel; };
  probe.glibc_version = [&] { return target.glibc; };
  probe.microarchitecture = [&] { return target.cpu_level; };
  probe.cuda_driver_version = [&]() -> std::optional<std::string> {
    if (!target.nvidia || target.nvidia->cuda_version.empty()) return std::nullopt;
    return target.nvidia->cuda_version;
  };
  return detect_virtual_packages(probe);
}

}  // namespace

Result<HostFacts> as_install_sees(const HostFacts& target) {
  auto virtuals = install_virtuals(target);
  if (!virtuals) return virtuals.error();
  auto find = [&](std::string_view name) -> const VirtualPackage* {
    for (const auto& vp : *virtuals)
      if (vp.name == name) return &vp;
    return nullptr;
  };
  HostFacts h = target;
  const auto* linux_vp = find("__linux");
  h.kernel = linux_vp ? linux_vp->version : "";
  const auto* glibc = find("__glibc");
  h.glibc = glibc ? glibc->version : "";
  const auto* arch = find("__archspec");
  h.cpu_level = arch ? arch->build : "";
  const auto* cuda = find("__cuda");
  if (cuda) {
    if (!h.nvidia) h.nvidia = NvidiaFacts{};
    h.nvidia->cuda_version = cuda->version;
  } else if (h.nvidia) {
    h.nvidia->cuda_version.clear();
  }
  return h;
}

std::vector<FailedRequirement> check_compatibility(const Snapshot& snapshot, const CapturedEnvironment& env,
                                                   const HostFacts& target_facts) {
  std::vector<FailedRequirement> failed;
  auto fail = [&](std::string requirement, std::string needed_by, std::string has) {
    FailedRequirement f{std::move(requirement), std::move(needed_by), std::move(has)};
    if (std::find(failed.begin(), failed.end(), f) == failed.end()) failed.push_back(std::move(f));
  };
  // The target's glibc, kernel, CPU level and CUDA as `envlock install` sees them
  // (detect_virtual_packages: CONDA_OVERRIDE_* applied).
  auto seen = as_install_sees(target_facts);
  if (!seen) {
    fail("a valid " + seen.error().where, "envlock (" + seen.error().message + ")", "");
    return failed;
  }
  const HostFacts& target = *seen;
  // The record-level virtual-package verdicts are install's own (check_host: MatchSpec parsing,
  // bracket forms such as __cuda[version='>=12'] included), so a host `check` accepts passes
  // `install`'s host check. Keyed by "name version" and the spec as written.
  std::set<std::pair<std::string, std::string>> install_refuses, install_unreadable;
  {
    auto virtuals = install_virtuals(target_facts);
    std::vector<RepoDataRecord> records;
    records.reserve(env.packages.size());
    for (const auto& p : env.packages) records.push_back(p.record);
    for (const auto& m : check_host(records, {}, virtuals ? *virtuals : std::vector<VirtualPackage>{})) {
      std::string req = m.requirement;
      if (req.ends_with(" (constrains)")) req.resize(req.size() - 13);
      install_refuses.emplace(m.package, req);
      if (m.host.starts_with("the requirement does not parse")) install_unreadable.emplace(m.package, req);
    }
  }

  // Platform.
  const bool all_noarch = std::all_of(env.packages.begin(), env.packages.end(),
                                      [](const CapturedPackage& p) { return p.record.subdir == "noarch"; });
  if (!all_noarch && !env.platform.empty() && env.platform != target.platform) {
    fail("platform " + env.platform, "environment " + env.name, target.platform);
  }

  // Virtual packages each record depends on (always) or constrains (only when the target has one).
  const std::string target_cuda = target.nvidia ? target.nvidia->cuda_version : "";
  // Shadowed records too: deploy installs them under the pip distribution that replaced them.
  for (const auto& p : env.packages) {
    const std::string who = p.record.name + " " + p.record.version.to_string();
    auto check = [&](const std::string& dep, bool constraint) {
      if (!dep.starts_with("__") && !dep.starts_with(kMicroarchLevelPackage)) return;
      const auto sp = dep.find_first_of(" =<>!~[");
      const std::string name = dep.substr(0, sp);
      std::string rest = sp == std::string::npos ? "" : dep.substr(sp);
      while (!rest.empty() && rest.front() == ' ') rest.erase(rest.begin());
      const auto sp2 = rest.find(' ');
      const std::string version = rest.substr(0, sp2);
      const std::string build = sp2 == std::string::npos ? "" : rest.substr(sp2 + 1);
      // install's verdict (check_host), described with what the target has.
      const bool refused = install_refuses.count({who, dep}) > 0;
      auto against = [&](const std::string& have, const std::string& describe) {
        if (!refused) return;
        if (install_unreadable.count({who, dep}) > 0) fail(dep + " (unreadable version constraint)", who, have);
        else fail(dep, who, have.empty() ? describe : have);
      };
      if (name == "__glibc") {
        against(target.glibc, "no glibc");
      } else if (name == "__cuda") {
        against(target_cuda, target.nvidia ? "an NVIDIA driver that reports no CUDA version" : "no NVIDIA driver");
      } else if (name == "__linux") {
        if (!target.platform.starts_with("linux-")) fail(dep, who, target.platform);
        else against(numeric_kernel(target.kernel), "no kernel release");
      } else if (name == "__unix") {
        if (!target.platform.starts_with("linux-") && !target.platform.starts_with("osx-")) fail(dep, who, target.platform);
      } else if (name == "__osx" || name == "__win") {
        if (!constraint) fail(dep, who, target.platform);
      } else if (name == "__archspec") {
        const std::string need = build.empty() ? version : build;
        const int need_level = x86_level_number(need);
        const int have_level = x86_level_number(target.cpu_level);
        if (need_level > 0 && have_level < need_level) fail(dep, who, target.cpu_level);
      } else if (name == kMicroarchLevelPackage) {
        const int need_level = microarch_level_needed(rest);
        if (!constraint && need_level > 0 && x86_level_number(target.cpu_level) < need_level) fail(dep, who, target.cpu_level);
      }
    };
    if (p.record.name == kMicroarchLevelPackage) {
      const int need_level = microarch_level_needed(p.record.version.to_string());
      if (need_level > 0 && x86_level_number(target.cpu_level) < need_level) {
        fail("x86_64_v" + std::to_string(need_level) + " (built for that CPU level)", who, target.cpu_level);
      }
    }
    for (const auto& d : p.record.depends) check(d, false);
    for (const auto& c : p.record.constrains) check(c, true);
  }

  // pip wheels: a distribution runs when any of its manylinux tags fits the target's glibc and
  // CPU; the newest glibc it may need is the oldest among its tags.
  static const std::regex manylinux(R"(^[^-]+-[^-]+-(manylinux_([0-9]+)_([0-9]+)|manylinux1|manylinux2010|manylinux2014)_(\w+)$)");
  const std::string python = env_python_minor(env);
  for (const auto& d : env.pip) {
    const std::size_t failed_before = failed.size();
    check_wheel_tags(d, target, python, fail);
    std::string min_glibc;
    std::vector<std::string> arches;
    for (const auto& tag : d.wheel_tags) {
      std::smatch m;
      // No wheel tag is this long; the regex's recursion grows with the length it matches.
      if (tag.size() > 256 || !std::regex_match(tag, m, manylinux)) continue;
      std::string glibc = m[2].matched ? m[2].str() + "." + m[3].str()
                          : m[1] == "manylinux1"    ? "2.5"
                          : m[1] == "manylinux2010" ? "2.12"
                                                    : "2.17";
      if (min_glibc.empty() || compare_dotted(glibc, min_glibc) < 0) min_glibc = glibc;
      arches.push_back(m[4].str());
    }
    if (min_glibc.empty()) continue;
    const std::string who = "pip:" + d.name + " " + d.version;
    if (failed.size() > failed_before) continue;  // no tag runs here at all: said once
    if (std::find(arches.begin(), arches.end(), target.cpu_arch) == arches.end()) {
      fail("a wheel for " + arches.front(), who, target.cpu_arch);
    }
    if (target.glibc.empty() || compare_dotted(target.glibc, min_glibc) < 0) fail("glibc >=" + min_glibc + " (manylinux)", who, target.glibc);
  }

  // The system libstdc++, when the environment ships none but has compiled code.
  const bool ships_libstdcxx = std::any_of(env.packages.begin(), env.packages.end(), [](const CapturedPackage& p) {
    return p.record.name == "libstdcxx" || p.record.name == "libstdcxx-ng";
  });
  if (!ships_libstdcxx && !all_noarch && !snapshot.host.libstdcxx_glibcxx.empty()) {
    const std::string who = "environment " + env.name + " (ships no libstdc++; used the system's)";
    if (target.libstdcxx_glibcxx.empty() || compare_dotted(target.libstdcxx_glibcxx, snapshot.host.libstdcxx_glibcxx) < 0) {
      fail("libstdc++ GLIBCXX_" + snapshot.host.libstdcxx_glibcxx, who,
           target.libstdcxx_glibcxx.empty() ? "" : "GLIBCXX_" + target.libstdcxx_glibcxx);
    }
    if (!snapshot.host.libstdcxx_cxxabi.empty() &&
        (target.libstdcxx_cxxabi.empty() || compare_dotted(target.libstdcxx_cxxabi, snapshot.host.libstdcxx_cxxabi) < 0)) {
      fail("libstdc++ CXXABI_" + snapshot.host.libstdcxx_cxxabi, who,
           target.libstdcxx_cxxabi.empty() ? "" : "CXXABI_" + target.libstdcxx_cxxabi);
    }
  }
  return failed;
}

}  // namespace envlock
