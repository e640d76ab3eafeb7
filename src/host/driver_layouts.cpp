// Where each GPU layout keeps the NVIDIA driver, and the fallback chain that settles the driver
// release and the CUDA version (docs/probe.md, "Layouts" and "Methods").
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <system_error>

#include "envlock/probe.hpp"
#include "envlock/text.hpp"

namespace envlock {
namespace {

namespace fs = std::filesystem;

// `host_path` ("/usr/lib/wsl/lib") under `root`.
fs::path under(const fs::path& root, const std::string& host_path) {
  return root / fs::path(host_path).relative_path();
}

bool exists_under(const fs::path& root, const std::string& host_path) {
  std::error_code ec;
  return fs::exists(under(root, host_path), ec);
}

// The folders of /etc/ld.so.conf (its plain lines) and /etc/ld.so.conf.d/*.conf, in name order.
std::vector<std::string> ld_so_conf_folders(const fs::path& root) {
  std::vector<fs::path> files{under(root, "/etc/ld.so.conf")};
  std::error_code ec;
  std::vector<fs::path> confd;
  for (fs::directory_iterator it(under(root, "/etc/ld.so.conf.d"), ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() == ".conf") confd.push_back(it->path());
  }
  std::sort(confd.begin(), confd.end());
  files.insert(files.end(), confd.begin(), confd.end());
  std::vector<std::string> out;
  for (const auto& f : files) {
    const auto text = read_host_file(f);
    if (!text) continue;
    std::istringstream in(*text);
    for (std::string line; std::getline(in, line);) {
      line = trim(line.substr(0, line.find('#')));
      if (line.starts_with("/")) out.push_back(line);
    }
  }
  return out;
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\f' || c == '\v' || c == '\r'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

// The run of digits at `at` (at most 9: no release or revision number is longer); 0 when none or
// longer.
std::size_t number_at(std::string_view s, std::size_t at) {
  std::size_t end = at;
  while (end < s.size() && is_digit(s[end])) ++end;
  return end - at <= 9 ? end - at : 0;
}

std::size_t skip_spaces(std::string_view s, std::size_t at) {
  while (at < s.size() && is_space(s[at])) ++at;
  return at;
}

// "# R35 (release), REVISION: 4.1, GCID: ..." -> "R35.4.1". Parsed by hand: the file is read as
// it is, and a pattern matcher's recursion must not meet an unbounded digit run.
std::string tegra_release(std::string_view text) {
  const std::string_view line = text.substr(0, text.find('\n'));
  const std::string unknown = "unknown release";
  std::size_t i = line.find('#');
  if (i == std::string_view::npos) return unknown;
  i = skip_spaces(line, i + 1);
  if (i >= line.size() || line[i] != 'R') return unknown;
  const std::size_t major = number_at(line, ++i);
  if (major == 0) return unknown;
  const std::string_view release = line.substr(i, major);
  i = skip_spaces(line, i + major);
  if (line.substr(i).substr(0, 10) != "(release),") return unknown;
  i = skip_spaces(line, i + 10);
  if (line.substr(i).substr(0, 9) != "REVISION:") return unknown;
  i = skip_spaces(line, i + 9);
  std::size_t end = i;
  while (end < line.size() && (is_digit(line[end]) || line[end] == '.') && end - i <= 16) ++end;
  if (end == i || end - i > 16) return unknown;
  return "R" + std::string(release) + "." + std::string(line.substr(i, end - i));
}

const char* const kSystemFolders[] = {"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64",
                                      "/usr/lib64/nvidia", "/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
                                      "/lib", "/usr/lib"};
const char* const kWslFolder = "/usr/lib/wsl/lib";
const char* const kTegraFolders[] = {"/usr/lib/aarch64-linux-gnu/tegra", "/usr/lib/aarch64-linux-gnu/nvidia"};
const char* const kContainerFolders[] = {"/usr/local/nvidia/lib64", "/usr/local/nvidia/lib", "/.singularity.d/libs"};

// Every /usr/local/cuda*/compat and /usr/local/cuda*/compat/lib folder, by name.
std::vector<std::string> compat_folders(const fs::path& root) {
  std::vector<std::string> out;
  std::error_code ec;
  for (fs::directory_iterator it(under(root, "/usr/local"), ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!name.starts_with("cuda")) continue;
    out.push_back("/usr/local/" + name + "/compat");
    out.push_back("/usr/local/" + name + "/compat/lib");
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string describe_query(const char* what, const std::string& library, VendorOutcome outcome, const std::string& error,
                           const std::string& step) {
  switch (outcome) {
    case VendorOutcome::Ok: return std::string(what) + " answered";
    case VendorOutcome::LibraryMissing: return "cannot load " + library + ": " + error;
    case VendorOutcome::SymbolMissing: return library + " lacks " + error;
    case VendorOutcome::Crashed: return library + " crashed (" + error + ") in " + (step.empty() ? "dlopen" : step);
    case VendorOutcome::TimedOut: return library + " did not answer in " + (step.empty() ? "dlopen" : step) + "; killed";
    case VendorOutcome::ChildFailed: return "could not start the query child: " + error;
  }
  return error;
}

}  // namespace

std::string parse_kernel_module_version(std::string_view line) {
  constexpr std::string_view key = "Module";
  // The release after whitespace at `at`, or empty.
  auto release_after = [&](std::size_t at) -> std::string {
    const std::size_t i = skip_spaces(line, at);
    if (i == at) return {};
    std::size_t pos = i;
    for (int parts = 1;; ++parts) {
      const std::size_t n = number_at(line, pos);
      if (n == 0) return {};  // no number, or one longer than any release has
      pos += n;
      if (parts == 3 || pos + 1 >= line.size() || line[pos] != '.' || !is_digit(line[pos + 1])) {
        return parts < 2 ? std::string() : std::string(line.substr(i, pos - i));
      }
      ++pos;
    }
  };
  for (std::size_t at = line.find(key); at != std::string_view::npos; at = line.find(key, at + 1)) {
    const std::size_t after = at + key.size();
    // "... Kernel Module for x86_64  550.54.14": the optional `for <arch>`.
    std::size_t i = skip_spaces(line, after);
    if (i > after && line.substr(i).starts_with("for")) {
      std::size_t j = skip_spaces(line, i + 3);
      if (j > i + 3) {
        std::size_t k = j;
        while (k < line.size() && !is_space(line[k])) ++k;
        if (k > j) {
          if (std::string v = release_after(k); !v.empty()) return v;
        }
      }
    }
    if (std::string v = release_after(after); !v.empty()) return v;
  }
  return {};
}

NvrmVersion parse_nvrm_version(std::string_view text) {
  constexpr std::string_view marker = "NVRM version:";
  NvrmVersion out;
  std::optional<std::string_view> first, first_marked;
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t end = std::min(text.find('\n', at), text.size());
    const std::string_view line = text.substr(at, end - at);
    at = end + 1;
    if (!first) first = line;
    const std::size_t nvrm = line.find(marker);
    if (nvrm == std::string_view::npos) continue;
    if (!first_marked) first_marked = line;
    if (std::string v = parse_kernel_module_version(line.substr(nvrm)); !v.empty()) {
      out.line = trim(line);
      out.version = std::move(v);
      return out;
    }
  }
  out.line = trim(first_marked.value_or(first.value_or("")));
  return out;
}

const char* to_string(DriverLayout layout) {
  switch (layout) {
    case DriverLayout::Override: return "override";
    case DriverLayout::LoaderPath: return "loader-path";
    case DriverLayout::System: return "system";
    case DriverLayout::Wsl: return "wsl";
    case DriverLayout::Tegra: return "tegra";
    case DriverLayout::Container: return "container";
    case DriverLayout::Compat: return "compat";
  }
  return "loader-path";
}

DriverLayout layout_of_library(const std::string& p, DriverLayout fallback) {
  if (p.starts_with("/usr/local/cuda") && p.find("/compat/") != std::string::npos) return DriverLayout::Compat;
  if (p.starts_with("/usr/lib/wsl/")) return DriverLayout::Wsl;
  for (const char* f : kTegraFolders) {
    if (p.starts_with(std::string(f) + "/")) return DriverLayout::Tegra;
  }
  for (const char* f : kContainerFolders) {
    if (p.starts_with(std::string(f) + "/")) return DriverLayout::Container;
  }
  return fallback;
}

std::vector<LibraryCandidate> driver_library_candidates(const fs::path& root, const std::string& soname,
                                                        const std::optional<std::string>& ld_library_path) {
  std::vector<LibraryCandidate> out;
  std::set<std::string> seen;
  const bool real_root = root.empty() || root == "/";
  auto add_folder = [&](const std::string& folder, DriverLayout layout) {
    const fs::path file = under(root, folder) / soname;
    std::error_code ec;
    if (!fs::exists(file, ec)) return;
    if (!seen.insert(file.lexically_normal().string()).second) return;
    out.push_back({file.string(), layout});
  };
  if (real_root) {
    out.push_back({soname, DriverLayout::LoaderPath});  // LD_LIBRARY_PATH, ld.so.cache, defaults
  } else {
    if (ld_library_path) {
      std::stringstream list(*ld_library_path);
      for (std::string folder; std::getline(list, folder, ':');) {
        if (folder.starts_with("/")) add_folder(folder, layout_of_library(folder + "/", DriverLayout::LoaderPath));
      }
    }
    for (const auto& folder : ld_so_conf_folders(root)) add_folder(folder, layout_of_library(folder + "/", DriverLayout::LoaderPath));
  }
  for (const char* f : kSystemFolders) add_folder(f, DriverLayout::System);
  add_folder(kWslFolder, DriverLayout::Wsl);
  for (const char* f : kTegraFolders) add_folder(f, DriverLayout::Tegra);
  for (const char* f : kContainerFolders) add_folder(f, DriverLayout::Container);
  for (const auto& f : compat_folders(root)) add_folder(f, DriverLayout::Compat);
  return out;
}

DriverFacts detect_driver(const Host& host) {
  DriverFacts f;
  const fs::path& root = host.root;
  auto env = [&](const std::string& name) { return host.env(name); };
  const std::string proc_path = "/proc/driver/nvidia/version";
  if (auto text = read_host_file(under(root, proc_path))) {
    f.kernel_module = true;
    NvrmVersion nvrm = parse_nvrm_version(*text);
    std::string line = std::move(nvrm.line);
    f.kernel_module_version = std::move(nvrm.version);
    // Quoted in the report: a bounded excerpt of a line that may be anything.
    if (line.size() > 200) line = line.substr(0, 200) + "...";
    f.kernel_module_line = std::move(line);
  }
  f.wsl = exists_under(root, "/dev/dxg");
  if (auto text = read_host_file(under(root, "/etc/nv_tegra_release"))) f.tegra_release = tegra_release(*text);
  for (const auto& folder : compat_folders(root)) {
    if (exists_under(root, folder + "/libcuda.so.1")) f.compat_libraries.push_back(folder + "/libcuda.so.1");
  }

  // --- the vendor libraries, each in a child --------------------------------------------------
  const auto ld_path = env("LD_LIBRARY_PATH");
  const std::vector<LibraryCandidate> cuda_candidates =
      host.libcuda.empty() ? driver_library_candidates(root, "libcuda.so.1", ld_path)
                           : std::vector<LibraryCandidate>{{host.libcuda, DriverLayout::Override}};
  const std::vector<LibraryCandidate> nvml_candidates =
      host.libnvml.empty() ? driver_library_candidates(root, "libnvidia-ml.so.1", ld_path)
                           : std::vector<LibraryCandidate>{{host.libnvml, DriverLayout::Override}};
  const std::string nowhere = "not in any folder searched under the root (loader path, system, WSL2, Tegra, container, compat)";
  if (cuda_candidates.empty()) {
    f.cuda.library = "libcuda.so.1";
    f.cuda.error = nowhere;
  } else {
    f.cuda = query_cuda_driver(cuda_candidates, host.timeout_ms, false, root);
  }
  if (nvml_candidates.empty()) {
    f.nvml.library = "libnvidia-ml.so.1";
    f.nvml.error = nowhere;
  } else {
    f.nvml = query_nvml(nvml_candidates, host.timeout_ms, root);
  }
  const bool cuda_loaded = f.cuda.outcome == VendorOutcome::Ok;
  const int init = f.cuda.init_result.value_or(-1);
  const bool is_compat = cuda_loaded && (f.cuda.layout == DriverLayout::Compat || init == 804);
  if (is_compat) {
    // The driver's own libcuda: the first candidate outside every compat folder.
    std::vector<LibraryCandidate> own;
    for (const auto& c : cuda_candidates) {
      if (c.layout != DriverLayout::Compat && c.layout != DriverLayout::Override && c.path != "libcuda.so.1") own.push_back(c);
    }
    if (!own.empty()) f.driver_cuda = query_cuda_driver(own, host.timeout_ms, false, root);
    f.compat = init == 0 ? CompatState::Works : (init == 803 || init == 804) ? CompatState::Fails : CompatState::None;
  }
  if (cuda_loaded && (init == 100 || init == 101) && env("CUDA_VISIBLE_DEVICES")) {
    f.unmasked = query_cuda_driver(cuda_candidates, host.timeout_ms, true, root);
  }

  // --- the chain: NVML, libcuda, /proc/driver/nvidia/version, nvidia-smi -q -x ----------------
  const bool nvml_ok = f.nvml.outcome == VendorOutcome::Ok && f.nvml.init_result.value_or(-1) == 0;
  // The version of a compat libcuda that failed: never the answer, whoever repeats it.
  const std::optional<int> failed_version =
      f.compat == CompatState::Fails ? f.cuda.driver_version : std::optional<int>{};
  // A libcuda that is there but cannot initialise: cuInit fails (other than for visibility), or
  // the library crashes, hangs or lacks a symbol. The loader would pick it for every CUDA
  // program too, so no method's CUDA version counts (docs/probe.md, rule 4).
  const bool cuda_broken = f.cuda.outcome == VendorOutcome::Crashed || f.cuda.outcome == VendorOutcome::TimedOut ||
                           f.cuda.outcome == VendorOutcome::SymbolMissing;
  const bool cuda_blocked = cuda_broken || (cuda_loaded && f.compat != CompatState::Fails && !cuda_init_counts(init));
  if (cuda_broken) f.cuda_blocked = describe_query("libcuda", f.cuda.library, f.cuda.outcome, f.cuda.error, f.cuda.step);
  else if (cuda_blocked) f.cuda_blocked = f.cuda.library + ": cuInit = " + f.cuda.init_error_name;
  auto settle_cuda = [&](int version, const std::string& method) {
    if (!f.cuda_version.empty() || version <= 0 || cuda_blocked) return false;
    if (failed_version && version == *failed_version) return false;
    f.cuda_version = cuda_version_string(version);
    f.cuda_version_method = method;
    return true;
  };

  // NVML
  {
    MethodAttempt m{"NVML", f.nvml.library, false, ""};
    if (nvml_ok) {
      m.ok = true;
      m.detail = "driver " + (f.nvml.driver_version.empty() ? std::string("(not said)") : f.nvml.driver_version);
      if (f.nvml.cuda_version) m.detail += ", CUDA " + cuda_version_string(*f.nvml.cuda_version);
      m.detail += ", " + std::to_string(f.nvml.devices.size()) + " device(s)";
      if (!f.nvml.driver_version.empty()) {
        f.driver_version = f.nvml.driver_version;
        f.driver_version_method = "NVML nvmlSystemGetDriverVersion (" + f.nvml.library + ")";
      }
    } else if (f.nvml.outcome == VendorOutcome::Ok) {
      m.detail = "nvmlInit_v2 = " + std::to_string(f.nvml.init_result.value_or(-1)) + " (" + f.nvml.init_error + ")";
    } else {
      m.detail = describe_query("NVML", f.nvml.library, f.nvml.outcome, f.nvml.error, f.nvml.step);
      if (!f.tegra_release.empty() && f.nvml.outcome == VendorOutcome::LibraryMissing) m.detail += " (Jetson/L4T has no NVML)";
    }
    f.methods.push_back(std::move(m));
  }
  // libcuda: the one that initialises counts.
  {
    MethodAttempt m{"libcuda", f.cuda.library, false, ""};
    if (!cuda_loaded) {
      m.detail = describe_query("libcuda", f.cuda.library, f.cuda.outcome, f.cuda.error, f.cuda.step);
    } else if (!f.cuda.driver_version) {
      m.detail = "cuDriverGetVersion gave no version";
    } else {
      const std::string v = "cuDriverGetVersion = " + std::to_string(*f.cuda.driver_version) + " (CUDA " +
                            cuda_version_string(*f.cuda.driver_version) + "), cuInit = " + f.cuda.init_error_name;
      if (f.compat == CompatState::Fails) {
        m.detail = v + ": this forward-compatibility library cannot initialise here, its version is not used";
      } else if (cuda_blocked) {
        m.detail = v + ": a driver that cannot initialise gives no CUDA version";
      } else {
        m.ok = true;
        m.detail = v;
      }
    }
    f.methods.push_back(std::move(m));
    if (f.driver_cuda) {
      const CudaDriverQuery& own = *f.driver_cuda;
      MethodAttempt o{"libcuda (the driver's own)", own.library, false, ""};
      if (own.outcome != VendorOutcome::Ok) {
        o.detail = describe_query("libcuda", own.library, own.outcome, own.error, own.step);
      } else if (own.driver_version) {
        o.ok = cuda_init_counts(own.init_result.value_or(-1));
        o.detail = "cuDriverGetVersion = " + std::to_string(*own.driver_version) + " (CUDA " +
                   cuda_version_string(*own.driver_version) + "), cuInit = " + own.init_error_name;
      } else {
        o.detail = "cuDriverGetVersion gave no version";
      }
      f.methods.push_back(std::move(o));
    }
  }
  // The CUDA version, in the order "what initialises is what counts".
  if (cuda_loaded && f.compat != CompatState::Fails && cuda_init_counts(init) && f.cuda.driver_version) {
    settle_cuda(*f.cuda.driver_version, "libcuda cuDriverGetVersion (" + f.cuda.library + ")");
  }
  if (f.driver_cuda && f.driver_cuda->outcome == VendorOutcome::Ok && f.driver_cuda->driver_version &&
      cuda_init_counts(f.driver_cuda->init_result.value_or(-1))) {
    settle_cuda(*f.driver_cuda->driver_version, "libcuda cuDriverGetVersion of the driver's own " + f.driver_cuda->library);
  }
  const bool fall_back = !cuda_loaded || f.compat == CompatState::Fails;
  if (fall_back && nvml_ok && f.nvml.cuda_version) {
    settle_cuda(*f.nvml.cuda_version, "NVML nvmlSystemGetCudaDriverVersion_v2 (" + f.nvml.library + ")");
  }
  // /proc/driver/nvidia/version: the kernel module's release, no CUDA version.
  {
    MethodAttempt m{"/proc/driver/nvidia/version", proc_path, f.kernel_module, ""};
    if (!f.kernel_module) {
      m.detail = f.wsl ? "absent: under WSL2 the driver runs on Windows"
                       : !f.tegra_release.empty() ? "absent: Jetson/L4T's nvgpu driver has no such file" : "absent";
    } else if (f.kernel_module_version.empty()) {
      m.ok = false;
      m.detail = "no version in `" + f.kernel_module_line + "`";
    } else {
      m.detail = "kernel module " + f.kernel_module_version;
      if (f.driver_version.empty()) {
        f.driver_version = f.kernel_module_version;
        f.driver_version_method = proc_path;
      }
    }
    f.methods.push_back(std::move(m));
  }
  // nvidia-smi -q -x: only when a fact is still open, and not when a fake driver was named.
  const bool open_fact = f.driver_version.empty() || (f.cuda_version.empty() && !cuda_blocked);
  if (open_fact) {
    std::string program = host.nvidia_smi;
    if (program.empty() && host.libcuda.empty()) {
      std::vector<std::string> places;
      if (root.empty() || root == "/") {
        if (const auto path = env("PATH")) {
          std::stringstream list(*path);
          for (std::string folder; std::getline(list, folder, ':');) {
            if (folder.starts_with("/")) places.push_back(folder + "/nvidia-smi");
          }
        }
      } else {
        places = {"/usr/bin/nvidia-smi", "/usr/local/bin/nvidia-smi"};
      }
      places.push_back(std::string(kWslFolder) + "/nvidia-smi");
      for (const auto& p : places) {
        const fs::path file = under(root, p);
        if (access(file.c_str(), X_OK) == 0) {
          program = file.string();
          break;
        }
      }
      if (program.empty()) {
        f.methods.push_back({"nvidia-smi -q -x", "nvidia-smi", false,
                             root.empty() || root == "/" ? "not found on PATH or in /usr/lib/wsl/lib"
                                                         : "not found in /usr/bin, /usr/local/bin or /usr/lib/wsl/lib"});
      }
    } else if (program.empty()) {
      f.methods.push_back({"nvidia-smi -q -x", "nvidia-smi", false, "not run: the driver library is named by ENVLOCK_LIBCUDA"});
    }
    if (!program.empty()) {
      NvidiaSmiAnswer smi = query_nvidia_smi(program, host.timeout_ms, root);
      MethodAttempt m{"nvidia-smi -q -x", smi.command, smi.error.empty(), smi.error};
      if (smi.error.empty()) {
        m.detail = "driver " + (smi.driver_version.empty() ? std::string("(not said)") : smi.driver_version) + ", CUDA " +
                   (smi.cuda_version.empty() ? std::string("(not said)") : smi.cuda_version);
        if (f.driver_version.empty() && !smi.driver_version.empty()) {
          f.driver_version = smi.driver_version;
          f.driver_version_method = "nvidia-smi -q -x <driver_version>";
        }
        int major = 0, minor = 0;
        if (fall_back && std::sscanf(smi.cuda_version.c_str(), "%d.%d", &major, &minor) == 2) {
          settle_cuda(major * 1000 + minor * 10, "nvidia-smi -q -x <cuda_version>");
        }
      }
      f.nvidia_smi = std::move(smi);
      f.methods.push_back(std::move(m));
    }
  }
  return f;
}

std::string HiddenDevices::to_string() const {
  std::string out = "driver present, no device visible to this process: " + variable + "=\"" + value + "\"";
  if (variable == "NVIDIA_VISIBLE_DEVICES") return out + " (the NVIDIA container runtime passed no GPU in)";
  return out + (installed > 0 ? " hides the " + std::to_string(installed) + " GPU(s) the driver has" : " hides every GPU");
}

std::optional<HiddenDevices> hidden_devices(const DriverFacts& f, const std::optional<std::string>& cvd,
                                            const std::optional<std::string>& nvd) {
  if (f.cuda.outcome != VendorOutcome::Ok || !f.cuda.init_result) return std::nullopt;
  const int init = *f.cuda.init_result;
  if (init != 100 && init != 101) return std::nullopt;
  if (cvd) {
    unsigned installed = 0;
    if (f.unmasked && f.unmasked->outcome == VendorOutcome::Ok && f.unmasked->init_result == 0) {
      installed = static_cast<unsigned>(f.unmasked->devices.size());
    }
    if (installed == 0) installed = static_cast<unsigned>(f.nvml.devices.size());
    if (installed > 0) return HiddenDevices{"CUDA_VISIBLE_DEVICES", *cvd, installed};
  }
  if (nvd && (nvd->empty() || *nvd == "void" || *nvd == "none")) return HiddenDevices{"NVIDIA_VISIBLE_DEVICES", *nvd, 0};
  return std::nullopt;
}

}  // namespace envlock
