#include "envlock/virtual_packages.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "envlock/text.hpp"
#include "envlock/version.hpp"

namespace envlock {

namespace {

// The leading dotted-numeric part of a kernel release: "6.1.0-18-amd64" -> "6.1.0".
std::string numeric_release(const std::string& release) {
  std::size_t end = 0;
  while (end < release.size() && (std::isdigit(static_cast<unsigned char>(release[end])) || release[end] == '.')) ++end;
  std::string out = release.substr(0, end);
  while (!out.empty() && out.back() == '.') out.pop_back();
  return out.empty() ? "0" : out;
}

// Applies CONDA_OVERRIDE_<var>: unset -> keep `detected`; empty -> remove; else validated value.
Result<std::optional<std::string>> apply_override(const Host& probe, const std::string& var,
                                                  std::optional<std::string> detected, bool is_version) {
  const auto value = probe.env(var);
  if (!value) return detected;
  if (value->empty()) return std::optional<std::string>{};
  if (is_version) {
    // A glibc, kernel or CUDA version starts with a digit; "banana" parses as a conda version but
    // names no release, so it is refused here, naming the variable, rather than compared.
    auto v = Version::parse(*value);
    if (!v || !std::isdigit(static_cast<unsigned char>(value->front()))) {
      Error e = v ? Error{ErrorKind::Parse, var, "", "", ""} : v.error();
      e.where = var;
      e.message = var + "=" + *value + " is not a version" + (v ? std::string() : ": " + v.error().message);
      e.hint = "set " + var + " to a version such as 12.4, or to an empty value to remove the package";
      return e;
    }
  } else if (value->find_first_of(" =,|") != std::string::npos) {
    Error e;
    e.kind = ErrorKind::Parse;
    e.where = var;
    e.message = "invalid value '" + *value + "': a build string may not contain spaces, '=', ',' or '|'";
    e.hint = "use a microarchitecture name such as x86_64_v3";
    return e;
  }
  return std::optional<std::string>{*value};
}

}  // namespace

Result<std::vector<VirtualPackage>> detect_virtual_packages(const Host& probe) {
  std::vector<VirtualPackage> out;
  out.push_back({"__unix", "0", "0"});

  auto linux_v = apply_override(probe, "CONDA_OVERRIDE_LINUX",
                                probe.kernel_release ? std::optional(numeric_release(probe.kernel_release())) : std::nullopt, true);
  if (!linux_v) return linux_v.error();
  if (*linux_v) out.push_back({"__linux", **linux_v, "0"});

  std::optional<std::string> glibc;
  if (probe.glibc_version) {
    std::string g = probe.glibc_version();
    if (!g.empty()) glibc = g;
  }
  auto glibc_v = apply_override(probe, "CONDA_OVERRIDE_GLIBC", glibc, true);
  if (!glibc_v) return glibc_v.error();
  if (*glibc_v) out.push_back({"__glibc", **glibc_v, "0"});

  std::optional<std::string> arch;
  if (probe.microarchitecture) {
    std::string a = probe.microarchitecture();
    if (!a.empty()) arch = a;
  }
  auto arch_v = apply_override(probe, "CONDA_OVERRIDE_ARCHSPEC", arch, false);
  if (!arch_v) return arch_v.error();
  if (*arch_v) out.push_back({"__archspec", "1", **arch_v});

  // Only ask the driver when no override decides the answer: loading libcuda is slow.
  const auto cuda_override = probe.env("CONDA_OVERRIDE_CUDA");
  std::optional<std::string> cuda;
  if (!cuda_override && probe.cuda_driver_version) cuda = probe.cuda_driver_version();
  auto cuda_v = apply_override(probe, "CONDA_OVERRIDE_CUDA", cuda, true);
  if (!cuda_v) return cuda_v.error();
  if (*cuda_v) out.push_back({"__cuda", **cuda_v, "0"});

  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return out;
}

}  // namespace envlock
