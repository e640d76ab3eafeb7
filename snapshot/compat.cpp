// Can a target run a captured environment? Platform, the virtual-package requirements of every
// record (__glibc, __cuda, __linux, __archspec, __osx, __win), manylinux tags of pip wheels (PEP 600),
// and the system libstdc++ when the environment ships none.
#include <algorithm>
#include <regex>

#include "text_util.hpp"
#include "envlock/snapshot.hpp"
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

// Does `have` satisfy the version part of a virtual-package spec ("", ">=2.17", ">=2.17,<3.0.a0")?
// nullopt when the spec does not parse.
std::optional<bool> satisfies(const std::string& have, const std::string& spec) {
  if (spec.empty() || spec == "*") return true;
  auto vs = VersionSpec::parse(spec);
  if (!vs) return std::nullopt;
  auto v = Version::parse(have);
  if (!v) return false;
  return vs->matches(*v);
}

}  // namespace

std::string FailedRequirement::to_string() const {
  return needed_by + " needs " + requirement + "; the target has " + (target_has.empty() ? "none" : target_has);
}

Result<HostFacts> as_install_sees(const HostFacts& target) {
  HostProbe probe;
  probe.getenv = HostProbe::system().getenv;
  if (!target.kernel.empty()) probe.kernel_release = [&] { return target.kernel; };
  probe.glibc_version = [&] { return target.glibc; };
  probe.microarchitecture = [&] { return target.cpu_level; };
  probe.cuda_driver_version = [&]() -> std::optional<std::string> {
    if (!target.nvidia || target.nvidia->cuda_version.empty()) return std::nullopt;
    return target.nvidia->cuda_version;
  };
  auto virtuals = detect_virtual_packages(probe);
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
      const auto sp = dep.find_first_of(" =<>!~");
      const std::string name = dep.substr(0, sp);
      std::string rest = sp == std::string::npos ? "" : dep.substr(sp);
      while (!rest.empty() && rest.front() == ' ') rest.erase(rest.begin());
      const auto sp2 = rest.find(' ');
      const std::string version = rest.substr(0, sp2);
      const std::string build = sp2 == std::string::npos ? "" : rest.substr(sp2 + 1);
      auto against = [&](const std::string& have, const std::string& describe) {
        if (have.empty()) {
          if (!constraint) fail(dep, who, describe);
          return;
        }
        auto ok = satisfies(have, version);
        if (!ok) fail(dep + " (unreadable version constraint)", who, have);
        else if (!*ok) fail(dep, who, have);
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
  for (const auto& d : env.pip) {
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
