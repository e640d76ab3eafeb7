// Host check: the lockfile's virtual packages and every record's `__*` depends against the host.
#include <algorithm>
#include <optional>
#include <string>

#include "envlock/install.hpp"
#include "envlock/match_spec.hpp"
#include "envlock/version.hpp"

namespace envlock {

namespace {

const VirtualPackage* find_virtual(const std::vector<VirtualPackage>& host, std::string_view name) {
  for (const auto& vp : host)
    if (vp.name == name) return &vp;
  return nullptr;
}

std::string describe_host(std::string_view name, const VirtualPackage* vp) {
  if (name == "__cuda") {
    return vp ? "this host's driver supports CUDA " + vp->version
              : "this host has no usable NVIDIA driver (no __cuda)";
  }
  if (name == "__glibc") return vp ? "this host has glibc " + vp->version : "this host has no glibc";
  if (name == "__linux") return vp ? "this host runs Linux " + vp->version : "this host is not Linux";
  if (name == "__archspec") return vp ? "this host's CPU is " + vp->build : "this host reports no __archspec";
  if (name == "__osx") return vp ? "this host runs macOS " + vp->version : "this host is not macOS";
  if (name == "__win") return vp ? "this host runs Windows" : "this host is not Windows";
  if (name == "__unix") return vp ? "this host is Unix" : "this host is not Unix";
  return vp ? "this host has " + vp->to_string() : "this host has no " + std::string(name);
}

/// x86_64_vN -> N; nullopt for other names.
std::optional<int> x86_level(std::string_view build) {
  if (!build.starts_with("x86_64_v") || build.size() != 9) return std::nullopt;
  const char c = build[8];
  if (c < '1' || c > '4') return std::nullopt;
  return c - '0';
}

std::string name_of_spec(std::string_view spec) {
  std::size_t end = 0;
  while (end < spec.size() && spec[end] != ' ' && spec[end] != '=' && spec[end] != '<' &&
         spec[end] != '>' && spec[end] != '!' && spec[end] != '~' && spec[end] != '[')
    ++end;
  return std::string(spec.substr(0, end));
}

/// True when the host's virtual package satisfies `spec`.
bool satisfies(const MatchSpec& spec, const VirtualPackage& vp) {
  PackageRecord record;
  record.name = vp.name;
  auto version = Version::parse(vp.version.empty() ? "0" : vp.version);
  if (!version) return false;
  record.version = *version;
  record.build = vp.build;
  if (spec.matches(record)) return true;
  // __archspec: a higher x86-64 psABI level runs code built for a lower one.
  if (vp.name == "__archspec" && spec.build && spec.build->is_exact()) {
    auto need = x86_level(spec.build->to_string());
    auto have = x86_level(vp.build);
    if (need && have && *have >= *need) {
      record.build = spec.build->to_string();
      return spec.matches(record);
    }
  }
  return false;
}

}  // namespace

std::string HostMismatch::to_string() const {
  return package + " needs " + requirement + "; " + host;
}

std::vector<HostMismatch> check_host(const std::vector<RepoDataRecord>& records,
                                     const std::vector<VirtualPackage>& locked_virtuals,
                                     const std::vector<VirtualPackage>& host) {
  std::vector<HostMismatch> out;
  for (const auto& locked : locked_virtuals) {
    const VirtualPackage* have = find_virtual(host, locked.name);
    const std::string requirement = locked.name + " >=" + locked.version;
    bool fits = have != nullptr;
    if (have && locked.name == "__archspec") {
      auto need = x86_level(locked.build);
      auto got = x86_level(have->build);
      fits = (need && got) ? *got >= *need : true;
    } else if (have && !locked.version.empty()) {
      auto lv = Version::parse(locked.version);
      auto hv = Version::parse(have->version);
      fits = lv && hv && *hv >= *lv;
    }
    if (!fits) {
      std::string req = locked.name == "__archspec" ? "__archspec " + locked.build
                        : locked.name == "__unix" || locked.name == "__win" ? locked.name
                                                                            : requirement;
      out.push_back({"the lockfile (solved for " + locked.to_string() + ")", req,
                     describe_host(locked.name, have)});
    }
  }
  for (const auto& record : records) {
    for (const auto& dep : record.depends) {
      if (!dep.starts_with("__")) continue;
      const std::string name = name_of_spec(dep);
      const std::string who = record.name + " " + record.version.to_string();
      auto spec = MatchSpec::parse(dep);
      if (!spec) {
        out.push_back({who, dep, "the requirement does not parse: " + spec.error().message});
        continue;
      }
      const VirtualPackage* have = find_virtual(host, name);
      if (have == nullptr || !satisfies(*spec, *have)) {
        out.push_back({who, dep, describe_host(name, have)});
      }
    }
    // A constraint on a virtual package binds only when the host has it (conda's constrains).
    for (const auto& con : record.constrains) {
      if (!con.starts_with("__")) continue;
      auto spec = MatchSpec::parse(con);
      if (!spec) continue;  // unreadable constraints are ignored, as conda does
      const VirtualPackage* have = find_virtual(host, name_of_spec(con));
      if (have != nullptr && !satisfies(*spec, *have))
        out.push_back({record.name + " " + record.version.to_string(), con + " (constrains)", describe_host(have->name, have)});
    }
  }
  return out;
}

std::optional<std::string> needs_cuda(const std::vector<RepoDataRecord>& records,
                                      const std::vector<VirtualPackage>& locked_virtuals) {
  for (const auto& vp : locked_virtuals) {
    if (vp.name == "__cuda") return "the lockfile was solved for " + vp.to_string();
  }
  for (const auto& record : records) {
    for (const auto& dep : record.depends) {
      if (name_of_spec(dep) == "__cuda") return record.name + " " + record.version.to_string() + " depends on " + dep;
    }
  }
  return std::nullopt;
}

std::optional<std::string> cuda_visibility_warning(const std::vector<RepoDataRecord>& records,
                                                   const std::vector<VirtualPackage>& locked_virtuals,
                                                   const std::optional<std::string>& hidden) {
  if (!hidden) return std::nullopt;
  const auto why = needs_cuda(records, locked_virtuals);
  if (!why) return std::nullopt;
  return *hidden + "; the environment needs CUDA (" + *why +
         "): installing it anyway, but a job run like this sees no GPU (see `envlock probe`)";
}

Error host_mismatch_error(const std::vector<HostMismatch>& mismatches) {
  Error e;
  e.kind = ErrorKind::Incompatible;
  e.message = mismatches.empty() ? "this host does not fit the lockfile" : mismatches.front().to_string();
  if (mismatches.size() > 1) {
    e.detail = "every requirement this host does not meet:";
    for (const auto& m : mismatches) e.detail += "\n  " + m.to_string();
  }
  e.hint =
      "install on a host that meets these requirements, lock for this host (CONDA_OVERRIDE_* "
      "sets virtual packages when locking), or pass --ignore-host to install anyway";
  return e;
}

}  // namespace envlock
