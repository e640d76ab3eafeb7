// Package facts, verdicts and the report of `envlock probe`.
#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "envlock/match_spec.hpp"
#include "envlock/platform.hpp"
#include "envlock/probe.hpp"
#include "envlock/text.hpp"
#include "envlock/version.hpp"
#include "envlock/virtual_packages.hpp"

namespace envlock {
namespace {

// Numeric dotted comparison of driver versions ("550.54.14" vs "525.60.13"); missing parts are 0.
int compare_dotted(const std::string& a, const std::string& b) {
  std::stringstream sa(a), sb(b);
  std::string pa, pb;
  for (;;) {
    const bool more_a = static_cast<bool>(std::getline(sa, pa, '.'));
    const bool more_b = static_cast<bool>(std::getline(sb, pb, '.'));
    if (!more_a && !more_b) return 0;
    const long x = more_a ? std::strtol(pa.c_str(), nullptr, 10) : 0;
    const long y = more_b ? std::strtol(pb.c_str(), nullptr, 10) : 0;
    if (x != y) return x < y ? -1 : 1;
  }
}

// "12.4.127" -> {12, 4}; false when the text does not start with a number.
bool major_minor(const std::string& version, int& major, int& minor) {
  major = minor = 0;
  const int n = std::sscanf(version.c_str(), "%d.%d", &major, &minor);
  return n >= 1;
}

std::string gib(std::uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
  return buf;
}

std::string cuda_from_int(int v) { return cuda_version_string(v); }

bool is_cuda_spec(const std::string& spec) {
  if (!spec.starts_with("__cuda")) return false;
  return spec.size() == 6 || spec[6] == ' ' || spec[6] == '=' || spec[6] == '<' || spec[6] == '>' ||
         spec[6] == '!' || spec[6] == '[';
}

// Splits a build string into tokens at '_' and '-' ("cpu_generic_py312h_0" -> cpu, generic, ...).
bool build_has_token(const std::string& build, const std::string& token) {
  std::string current;
  for (char c : build + "_") {
    if (c == '_' || c == '-' || c == '.') {
      if (current == token) return true;
      current.clear();
    } else {
      current += c;
    }
  }
  return false;
}

const char* kFrameworks[] = {"pytorch", "torch", "libtorch", "tensorflow", "tensorflow-base", "jaxlib",
                             "paddlepaddle", "mxnet", "onnxruntime"};

bool is_framework(const std::string& name) {
  return std::any_of(std::begin(kFrameworks), std::end(kFrameworks), [&](const char* f) { return name == f; });
}

std::string describe(const RepoDataRecord& r) { return r.name + " " + r.version.to_string() + " (" + r.build + ")"; }

}  // namespace

std::string minimum_driver_for_cuda(int major, int minor) {
  // NVIDIA CUDA Toolkit release notes, "CUDA Toolkit and Corresponding Driver Versions" and
  // "CUDA Minor Version Compatibility" (Linux x86_64); see docs/probe.md.
  if (major >= 14) return {};
  if (major == 13) return "580.65.06";
  if (major == 12) return "525.60.13";
  if (major == 11) return "450.80.02";
  if (major == 10) {
    if (minor >= 2) return "440.33";
    if (minor == 1) return "418.39";
    return "410.48";
  }
  if (major == 9) {
    if (minor >= 2) return "396.26";
    if (minor == 1) return "390.46";
    return "384.81";
  }
  if (major == 8) return "367.48";
  return {};
}

int minimum_compute_capability_for_cuda(int major) {
  // CUDA release notes: 11.0 dropped sm_30 (Kepler GK10x), 12.0 dropped Kepler (sm_35/37),
  // 13.0 dropped Maxwell, Pascal and Volta (sm_50..sm_72).
  switch (major) {
    case 10: return 30;
    case 11: return 35;
    case 12: return 50;
    case 13: return 75;
    default: return 0;
  }
}

PackageCudaFacts analyze_packages(const std::vector<RepoDataRecord>& records,
                                  const std::vector<std::string>& requested,
                                  const std::vector<VirtualPackage>& solved_with) {
  PackageCudaFacts f;
  for (const auto& spec : requested) {
    const std::string lower = ascii_lower(spec);
    if (lower.find("cuda") != std::string::npos || lower.find("-gpu") != std::string::npos) {
      f.gpu_reasons.push_back("the manifest asks for it: " + spec);
    }
  }
  for (const auto& vp : solved_with) {
    if (vp.name == "__cuda") f.gpu_reasons.push_back("the lockfile was solved with " + vp.to_string());
  }

  // The CUDA version, by the most specific witness: cuda-version, then cuda-cudart, then the
  // legacy cudatoolkit, then pytorch's pytorch-cuda metapackage.
  const char* witnesses[] = {"cuda-version", "cuda-cudart", "cudatoolkit", "pytorch-cuda"};
  int witness_rank = 99;
  for (const auto& r : records) {
    for (const auto& d : r.depends) {
      if (!is_cuda_spec(d)) continue;
      f.cuda_specs.push_back(r.name + " " + r.version.to_string() + ": " + d);
      f.gpu_reasons.push_back(describe(r) + " depends on " + d);
    }
    for (const auto& c : r.constrains) {
      if (is_cuda_spec(c)) f.cuda_specs.push_back(r.name + " " + r.version.to_string() + ": " + c + " (constrains)");
    }
    for (int i = 0; i < 4; ++i) {
      if (r.name != witnesses[i]) continue;
      if (r.name != "cuda-version") f.gpu_reasons.push_back(describe(r) + " is a CUDA runtime");
      if (i < witness_rank) {
        witness_rank = i;
        f.cuda_version = r.version.to_string();
        f.cuda_version_source = r.name + " " + r.version.to_string();
      }
    }
    if (is_framework(r.name) && (build_has_token(r.build, "cuda") || r.build.starts_with("cuda") ||
                                 r.build.find("cuda1") != std::string::npos)) {
      f.gpu_reasons.push_back(describe(r) + " is a CUDA build");
    }
    // CPU-only builds of GPU frameworks and the markers that select them.
    if (is_framework(r.name) && (build_has_token(r.build, "cpu") || r.build.starts_with("cpu"))) {
      f.cpu_only_builds.push_back(r.name + " " + r.version.to_string() + " build " + r.build + " is a CPU-only build");
    }
    if (r.name == "cpuonly") f.cpu_only_builds.push_back("cpuonly " + r.version.to_string() + " is present (selects CPU-only pytorch)");
    if (r.name == "pytorch-cpu" || r.name == "tensorflow-cpu") {
      f.cpu_only_builds.push_back(r.name + " " + r.version.to_string() + " is a CPU-only package");
    }
    if (r.name == "pytorch-mutex" && build_has_token(r.build, "cpu")) {
      f.cpu_only_builds.push_back("pytorch-mutex " + r.version.to_string() + " build " + r.build + " selects CPU-only pytorch");
    }
    if (r.name == "_tflow_select" && !build_has_token(r.build, "gpu")) {
      f.cpu_only_builds.push_back("_tflow_select " + r.version.to_string() + " build " + r.build + " selects CPU-only tensorflow");
    }
  }
  if (!f.cuda_version.empty() && f.gpu_reasons.empty() && witness_rank == 0) {
    f.gpu_reasons.push_back("cuda-version " + f.cuda_version + " pins a CUDA version");
  }
  auto unique_sorted = [](std::vector<std::string>& v) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
  };
  unique_sorted(f.cuda_specs);
  unique_sorted(f.gpu_reasons);
  unique_sorted(f.cpu_only_builds);
  return f;
}

const char* to_string(Verdict verdict) {
  switch (verdict) {
    case Verdict::Pass: return "pass";
    case Verdict::Info: return "info";
    case Verdict::Warn: return "warn";
    case Verdict::Fail: return "fail";
  }
  return "fail";
}

namespace {

struct Judge {
  std::vector<ProbeCheck>& out;
  void add(std::string id, Verdict v, std::string summary, std::string source, std::string hint = {}, bool no_gpu = false) {
    out.push_back({std::move(id), v, std::move(summary), std::move(source), v == Verdict::Pass || v == Verdict::Info ? std::string() : std::move(hint), no_gpu});
  }
};

// The driver's supported CUDA version, as the chain settled it (the `__cuda` version): never that
// of a library that cannot initialise.
std::optional<std::pair<int, int>> driver_cuda(const GpuHostFacts& h) {
  int major = 0, minor = 0;
  if (!h.cuda_version.empty() && major_minor(h.cuda_version, major, minor)) return std::make_pair(major, minor);
  return std::nullopt;
}

std::string driver_string(const GpuHostFacts& h) { return h.driver_version; }

std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : sep) + p;
  return out;
}

// "; not loaded: /usr/lib64/libcuda.so.1 (wrong ELF class)" for the candidates that failed.
std::string tried_text(const std::vector<LibraryAttempt>& tried) {
  std::vector<std::string> parts;
  for (const auto& t : tried) parts.push_back(t.path + " (" + t.error + ")");
  return parts.empty() ? std::string() : "; not loaded: " + join(parts, ", ");
}

// The folder of a library file: what to drop from LD_LIBRARY_PATH.
std::string folder_of(const std::string& file) {
  const std::size_t slash = file.rfind('/');
  return slash == std::string::npos ? file : file.substr(0, slash);
}

}  // namespace

ProbeReport evaluate_probe(GpuHostFacts host, std::optional<PackageCudaFacts> packages, std::string packages_source) {
  ProbeReport report;
  report.host = std::move(host);
  report.packages = std::move(packages);
  report.packages_source = std::move(packages_source);
  const GpuHostFacts& h = report.host;
  Judge j{report.checks};
  const bool need = report.packages && report.packages->needs_gpu();
  const bool no_driver = !h.kernel_module && h.device_nodes.empty() &&
                         h.cuda.outcome == VendorOutcome::LibraryMissing &&
                         h.nvml.outcome == VendorOutcome::LibraryMissing;
  // What "absent" weighs: nothing at all on a CPU host is only information; absent parts of a
  // driver that is otherwise there are failures.
  const Verdict absent = need ? Verdict::Fail : (no_driver ? Verdict::Info : Verdict::Fail);
  const bool in_container = !h.container_hints.empty();
  const std::string container_hint =
      in_container ? "this looks like a container: start it with the NVIDIA container runtime (docker run --gpus all, "
                     "podman --device nvidia.com/gpu=all, or a Kubernetes nvidia.com/gpu limit)"
                   : "install the NVIDIA driver for this GPU, or run on a GPU node";

  // --- driver -----------------------------------------------------------------------------
  {
    std::vector<std::string> layouts;
    if (h.wsl) layouts.push_back("WSL2 (/dev/dxg)");
    if (!h.tegra_release.empty()) layouts.push_back("Jetson/L4T " + h.tegra_release + " (/etc/nv_tegra_release)");
    if (!h.compat_libraries.empty()) layouts.push_back("CUDA forward compatibility installed (" + join(h.compat_libraries, ", ") + ")");
    if (h.cuda.outcome == VendorOutcome::Ok) {
      layouts.push_back(std::string("libcuda from the ") + to_string(h.cuda.layout) + " layout (" + h.cuda.library + ")");
    }
    if (h.nvml.outcome == VendorOutcome::Ok) {
      layouts.push_back(std::string("NVML from the ") + to_string(h.nvml.layout) + " layout (" + h.nvml.library + ")");
    }
    if (!layouts.empty()) j.add("driver.layout", Verdict::Info, join(layouts, "; "), "/dev, /etc, the library folders of every layout");
  }
  if (h.kernel_module) {
    j.add("driver.kernel-module", Verdict::Pass,
          "NVIDIA kernel module " + (h.kernel_module_version.empty() ? std::string("loaded (version not found in the file)") : h.kernel_module_version),
          "/proc/driver/nvidia/version");
  } else if (h.wsl || !h.tegra_release.empty()) {
    j.add("driver.kernel-module", Verdict::Info,
          h.wsl ? "no /proc/driver/nvidia/version: under WSL2 the NVIDIA driver runs on Windows and reaches Linux through /dev/dxg"
                : "no /proc/driver/nvidia/version: Jetson/L4T " + h.tegra_release + " drives the GPU with nvgpu",
          h.wsl ? "/dev/dxg" : "/etc/nv_tegra_release");
  } else {
    const bool works_anyway = h.cuda.outcome == VendorOutcome::Ok && h.cuda.init_result == 0;
    j.add("driver.kernel-module", works_anyway ? Verdict::Info : absent,
          works_anyway ? "no /proc/driver/nvidia/version, but libcuda works (WSL or a restricted /proc)"
                       : "no NVIDIA kernel module (/proc/driver/nvidia/version is absent)",
          "/proc/driver/nvidia/version", container_hint, !works_anyway);
  }

  {
    std::vector<std::string> blocked, names;
    bool have_ctl = false, have_uvm = false, have_gpu = false;
    for (const auto& n : h.device_nodes) {
      names.push_back(n.path);
      if (!n.accessible) blocked.push_back(n.path);
      if (n.path == "/dev/nvidiactl") have_ctl = true;
      if (n.path == "/dev/nvidia-uvm") have_uvm = true;
      if (n.path.size() > 11 && std::isdigit(static_cast<unsigned char>(n.path[11]))) have_gpu = true;
    }
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
    const bool dxg = std::find(names.begin(), names.end(), "/dev/dxg") != names.end();
    const bool nvmap = std::find(names.begin(), names.end(), "/dev/nvmap") != names.end();
    if ((dxg && h.wsl && !have_gpu) || (nvmap && !h.tegra_release.empty() && !have_gpu)) {
      if (blocked.empty()) {
        j.add("driver.device-nodes", Verdict::Pass, list + " accessible" + (dxg ? " (WSL2 has no /dev/nvidia* nodes)" : " (Jetson/L4T)"),
              "/dev (access R_OK|W_OK)");
      } else {
        j.add("driver.device-nodes", Verdict::Fail, "not readable and writable by this user: " + join(blocked, ", "), "/dev (access R_OK|W_OK)",
              h.wsl ? "add the user to the group that owns /dev/dxg (often `render` or `video`)" : "add the user to the `video` group", true);
      }
    } else if (names.empty()) {
      j.add("driver.device-nodes", absent, "no /dev/nvidia* device nodes", "/dev", container_hint, true);
    } else if (!blocked.empty()) {
      std::string b;
      for (const auto& n : blocked) b += (b.empty() ? "" : ", ") + n;
      j.add("driver.device-nodes", Verdict::Fail, "not readable and writable by this user: " + b, "/dev (access R_OK|W_OK)",
            "add the user to the group that owns the nodes (often `video`), or pass the devices into the container", true);
    } else if (!have_ctl) {
      j.add("driver.device-nodes", Verdict::Fail, "incomplete: " + list + "; /dev/nvidiactl missing", "/dev", container_hint, true);
    } else if (!have_gpu) {
      j.add("driver.device-nodes", need ? Verdict::Fail : Verdict::Warn, list + " accessible; no /dev/nvidia<N> GPU node", "/dev",
            container_hint, true);
    } else if (!have_uvm) {
      j.add("driver.device-nodes", Verdict::Warn, list + " accessible; /dev/nvidia-uvm missing", "/dev",
            "CUDA needs /dev/nvidia-uvm: run `nvidia-modprobe -u -c=0` on the host, or pass it into the container");
    } else {
      j.add("driver.device-nodes", Verdict::Pass, list + " accessible", "/dev (access R_OK|W_OK)");
    }
  }

  const std::string cuda_src = "dlopen(" + h.cuda.library + ")";
  switch (h.cuda.outcome) {
    case VendorOutcome::Ok:
      j.add("driver.libcuda", Verdict::Pass, "loaded " + h.cuda.library + " (" + to_string(h.cuda.layout) + ")" + tried_text(h.cuda.tried),
            cuda_src);
      break;
    case VendorOutcome::LibraryMissing:
      j.add("driver.libcuda", absent,
            h.cuda.tried.size() > 1 ? "no libcuda.so.1 loads" + tried_text(h.cuda.tried)
                                    : "cannot load " + h.cuda.library + ": " + h.cuda.error,
            cuda_src,
            h.kernel_module ? "the kernel module is loaded but its user-space library is not on the loader path: "
                              "install the matching libcuda (e.g. libnvidia-compute-<version>) or fix ld.so.conf"
                            : container_hint,
            true);
      break;
    case VendorOutcome::SymbolMissing:
      j.add("driver.libcuda", Verdict::Fail, h.cuda.library + " loads but lacks " + h.cuda.error + " (a half-installed or wrong library)",
            cuda_src, "reinstall the NVIDIA driver's user-space libraries; check `ldconfig -p | grep libcuda`", true);
      break;
    case VendorOutcome::Crashed:
      j.add("driver.libcuda", Verdict::Fail, h.cuda.library + " crashed (" + h.cuda.error + ") in " + (h.cuda.step.empty() ? "dlopen" : h.cuda.step),
            cuda_src + " in a child process", "the driver library is broken: reinstall the driver matching the kernel module", true);
      break;
    case VendorOutcome::TimedOut:
      j.add("driver.libcuda", Verdict::Fail, h.cuda.library + " did not answer in " + (h.cuda.step.empty() ? "dlopen" : h.cuda.step) + "; the child was killed",
            cuda_src + " in a child process", "a hung driver: check `dmesg` for Xid errors; the GPU may need a reset", true);
      break;
    case VendorOutcome::ChildFailed:
      j.add("driver.libcuda", Verdict::Fail, "could not start the query child: " + h.cuda.error, cuda_src);
      break;
  }

  if (!h.cuda_version.empty()) {
    j.add("driver.cuda-version", Verdict::Pass, "the driver supports CUDA " + h.cuda_version + ": __cuda=" + h.cuda_version,
          h.cuda_version_method);
  } else if (h.cuda.outcome != VendorOutcome::Ok && !h.cuda_blocked.empty()) {
    j.add("driver.cuda-version", Verdict::Info,
          "no __cuda: a libcuda that cannot initialise gives no CUDA version" +
              (h.nvml.cuda_version ? ", whatever NVML says (CUDA " + cuda_from_int(*h.nvml.cuda_version) + ")" : std::string()) + ": " +
              h.cuda_blocked,
          cuda_src + " in a child process");
  } else if (h.cuda.driver_version) {
    j.add("driver.cuda-version", Verdict::Info,
          h.cuda.library + " reports CUDA " + cuda_from_int(*h.cuda.driver_version) + " but cannot initialise (cuInit = " +
              h.cuda.init_error_name + "): no __cuda",
          "cuDriverGetVersion = " + std::to_string(*h.cuda.driver_version) + ", cuInit");
  }
  if (h.compat != CompatState::None) {
    const std::string own = h.driver_cuda && h.driver_cuda->driver_version
                                ? "the driver's own " + h.driver_cuda->library + " supports CUDA " + cuda_from_int(*h.driver_cuda->driver_version)
                                : "the driver's own libcuda was not found";
    const std::string compat_cuda = h.cuda.driver_version ? cuda_from_int(*h.cuda.driver_version) : std::string("?");
    if (h.compat == CompatState::Works) {
      j.add("driver.compat", Verdict::Info,
            "forward compatibility works: " + h.cuda.library + " gives CUDA " + compat_cuda + " on kernel driver " +
                (h.driver_version.empty() ? std::string("(version unknown)") : h.driver_version) + "; " + own,
            "cuInit, cuDriverGetVersion of both libraries");
    } else {
      j.add("driver.compat", Verdict::Fail,
            "the forward-compatibility library " + h.cuda.library + " reports CUDA " + compat_cuda + " but cuInit = " + h.cuda.init_error_name +
                " (" + std::to_string(h.cuda.init_result.value_or(0)) + "); kernel driver " +
                (h.driver_version.empty() ? std::string("(version unknown)") : h.driver_version) + ": " + own +
                (h.cuda_version.empty() ? std::string(", no __cuda") : ", so __cuda=" + h.cuda_version),
            "cuInit, cuDriverGetVersion (" + h.cuda.library + ")",
            "take " + folder_of(h.cuda.library) + " out of LD_LIBRARY_PATH (forward compatibility needs a data-center GPU and a "
                "driver branch NVIDIA lists for it), or install a driver that supports CUDA " + compat_cuda + " natively",
            true);
    }
  }
  const auto hidden = hidden_devices(h, h.cuda_visible_devices, h.nvidia_visible_devices);
  if (h.cuda.init_result) {
    const int rc = *h.cuda.init_result;
    const std::string name = h.cuda.init_error_name;
    if (rc == 0) {
      j.add("driver.cuinit", Verdict::Pass, "cuInit(0) = CUDA_SUCCESS", "cuInit");
    } else if ((rc == 100 || rc == 101) && hidden) {
      j.add("driver.cuinit", Verdict::Info, "cuInit(0) = " + name + " (" + std::to_string(rc) + "): " + hidden->variable + " hides the devices",
            "cuInit");
    } else if (rc == 100) {
      j.add("driver.cuinit", need ? Verdict::Fail : Verdict::Warn, "cuInit(0) = " + name + " (" + std::to_string(rc) + "): no CUDA device is visible",
            "cuInit", in_container ? container_hint : "no GPU is attached to this host, or the driver cannot see it: check `nvidia-smi` and `dmesg`",
            true);
    } else if ((rc == 803 || rc == 804) && h.compat == CompatState::Fails) {
      j.add("driver.cuinit", Verdict::Fail, "cuInit(0) = " + name + " (" + std::to_string(rc) + ") in the forward-compatibility library " + h.cuda.library,
            "cuInit", "see driver.compat", true);
    } else if (rc == 803) {
      j.add("driver.cuinit", Verdict::Fail, "cuInit(0) = " + name + " (803): libcuda and the kernel module are from different driver versions",
            "cuInit", "reboot, or reload the nvidia kernel module, after a driver update; in a container, do not ship libcuda in the image", true);
    } else if (rc == 804) {
      j.add("driver.cuinit", Verdict::Fail, "cuInit(0) = " + name + " (804): the forward-compatibility libcuda is not supported on this GPU",
            "cuInit", "remove the cuda-compat package from the library path, or use a data-center GPU", true);
    } else if (rc == 35) {
      j.add("driver.cuinit", Verdict::Fail, "cuInit(0) = " + name + " (35): the driver is older than this libcuda",
            "cuInit", "install a newer NVIDIA driver", true);
    } else {
      j.add("driver.cuinit", Verdict::Fail, "cuInit(0) = " + name + " (" + std::to_string(rc) + ")", "cuInit",
            "check `dmesg` for NVRM messages and `nvidia-smi`", true);
    }
  }

  const std::string nvml_src = "dlopen(" + h.nvml.library + ")";
  switch (h.nvml.outcome) {
    case VendorOutcome::Ok:
      if (h.nvml.init_result && *h.nvml.init_result != 0) {
        j.add("driver.nvml", Verdict::Fail, "nvmlInit_v2 = " + std::to_string(*h.nvml.init_result) + " (" + h.nvml.init_error + ")",
              nvml_src, "a driver/library version mismatch is fixed by a reboot or a reload of the kernel module");
      } else {
        j.add("driver.nvml", Verdict::Pass, "NVML driver version " + h.nvml.driver_version, "nvmlSystemGetDriverVersion");
      }
      break;
    case VendorOutcome::LibraryMissing:
      j.add("driver.nvml", no_driver || !h.tegra_release.empty() ? (no_driver ? absent : Verdict::Info) : Verdict::Warn,
            "cannot load " + h.nvml.library + ": " + h.nvml.error + (h.tegra_release.empty() ? "" : " (Jetson/L4T has no NVML)"), nvml_src,
            "install the driver's NVML library (libnvidia-ml); without it device names and MIG mode come from CUDA only");
      break;
    case VendorOutcome::SymbolMissing:
      j.add("driver.nvml", Verdict::Fail, h.nvml.library + " loads but lacks " + h.nvml.error, nvml_src,
            "reinstall the NVIDIA driver's user-space libraries");
      break;
    case VendorOutcome::Crashed:
    case VendorOutcome::TimedOut:
      j.add("driver.nvml", Verdict::Fail,
            h.nvml.library + (h.nvml.outcome == VendorOutcome::Crashed ? " crashed (" + h.nvml.error + ")" : std::string(" did not answer")) +
                " in " + (h.nvml.step.empty() ? "dlopen" : h.nvml.step),
            nvml_src + " in a child process", "check `dmesg` for Xid errors and `nvidia-smi`");
      break;
    case VendorOutcome::ChildFailed:
      j.add("driver.nvml", Verdict::Fail, "could not start the query child: " + h.nvml.error, nvml_src);
      break;
  }

  if (!h.kernel_module_version.empty() && !h.nvml.driver_version.empty() &&
      compare_dotted(h.kernel_module_version, h.nvml.driver_version) != 0) {
    j.add("driver.version-match", Verdict::Fail,
          "kernel module " + h.kernel_module_version + " but user-space driver " + h.nvml.driver_version,
          "/proc/driver/nvidia/version vs nvmlSystemGetDriverVersion",
          "reboot or reload the nvidia kernel module after a driver update", true);
  }

  // --- how each fact was found -------------------------------------------------------------
  for (const auto& m : h.methods) {
    std::string id = m.method == "NVML" ? "nvml" : m.method == "libcuda" ? "libcuda" : m.method.starts_with("libcuda") ? "libcuda-own"
                     : m.method.starts_with("/proc") ? "proc" : "nvidia-smi";
    j.add("method." + id, m.ok ? Verdict::Pass : Verdict::Info, m.method + (m.ok ? ": " : " failed: ") + m.detail, m.source);
  }
  if (!h.driver_version.empty()) {
    j.add("driver.version", Verdict::Pass, "driver " + h.driver_version, h.driver_version_method);
  }

  // --- devices ----------------------------------------------------------------------------
  const bool cuda_ok = h.cuda.outcome == VendorOutcome::Ok && h.cuda.init_result == 0;
  const std::size_t physical = h.nvml.devices.size();
  const std::size_t visible = h.cuda.devices.size();
  const bool cvd_empty = h.cuda_visible_devices && h.cuda_visible_devices->empty();
  const bool nvd_hides = h.nvidia_visible_devices && (h.nvidia_visible_devices->empty() || *h.nvidia_visible_devices == "void" ||
                                                      *h.nvidia_visible_devices == "none");
  if (h.cuda_visible_devices) {
    j.add("devices.cuda-visible-devices", Verdict::Info,
          "CUDA_VISIBLE_DEVICES=\"" + *h.cuda_visible_devices + "\"" + (cvd_empty ? ": an empty value hides every GPU from CUDA" : ""),
          "environment");
  }
  if (hidden) {
    const bool by_cvd = hidden->variable == "CUDA_VISIBLE_DEVICES";
    j.add("devices.visibility", need ? Verdict::Fail : Verdict::Warn, hidden->to_string(),
          by_cvd ? "cuInit = " + h.cuda.init_error_name + " with CUDA_VISIBLE_DEVICES set; " +
                       (h.unmasked && h.unmasked->init_result == 0 ? "cuInit without it sees " + std::to_string(h.unmasked->devices.size())
                                                                   : "NVML lists " + std::to_string(h.nvml.devices.size()))
                 : "cuInit = " + h.cuda.init_error_name + ", NVIDIA_VISIBLE_DEVICES",
          by_cvd ? "unset CUDA_VISIBLE_DEVICES, or set it to the devices to use: indices (0,1) or UUIDs from `nvidia-smi -L` "
                   "(GPU-..., MIG-...); -1 or an empty value hides every GPU"
                 : "start the container with the GPUs it needs: docker run --gpus all (or NVIDIA_VISIBLE_DEVICES=all)",
          true);
  }
  if (h.nvidia_visible_devices) {
    j.add("devices.nvidia-visible-devices", nvd_hides ? Verdict::Warn : Verdict::Info,
          "NVIDIA_VISIBLE_DEVICES=" + (h.nvidia_visible_devices->empty() ? std::string("(empty)") : *h.nvidia_visible_devices) +
              (nvd_hides ? ": the NVIDIA container runtime mounts no GPU" : ""),
          "environment", "set NVIDIA_VISIBLE_DEVICES=all (or device indices) when starting the container");
  }
  if (physical > 0 || visible > 0 || cuda_ok) {
    std::string summary = std::to_string(visible) + " visible to CUDA";
    if (h.nvml.outcome == VendorOutcome::Ok) summary += ", " + std::to_string(physical) + " installed (NVML)";
    const bool none = visible == 0;
    // A cuInit that failed outright is driver.cuinit's verdict, not a visibility matter.
    const bool init_failed = h.cuda.init_result && !cuda_init_counts(*h.cuda.init_result);
    // So is a libcuda that crashed, hung or lacks a symbol: driver.libcuda's.
    const bool library_broken = h.cuda.outcome == VendorOutcome::Crashed || h.cuda.outcome == VendorOutcome::TimedOut ||
                                h.cuda.outcome == VendorOutcome::SymbolMissing;
    if (none && library_broken) summary += " (libcuda cannot be used: see driver.libcuda)";
    else if (none && init_failed) summary += " (cuInit failed: see driver.cuinit)";
    j.add("devices.count", none ? (hidden || init_failed || library_broken ? Verdict::Info : need ? Verdict::Fail : Verdict::Warn) : Verdict::Pass, summary,
          "cuDeviceGetCount, nvmlDeviceGetCount_v2", "make a GPU visible to this process (CUDA_VISIBLE_DEVICES, container GPU options)",
          none);
  }
  if (!h.nvml.devices.empty()) {
    for (const auto& d : h.nvml.devices) {
      const bool vis = visible_under(h.cuda_visible_devices, d.index, d.uuid, static_cast<unsigned>(physical));
      std::string s = d.name + ", compute capability " + std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor) + ", " +
                      gib(d.total_memory_bytes);
      s += vis ? ", visible" : (cvd_empty ? ", hidden (CUDA_VISIBLE_DEVICES is empty)" : ", hidden by CUDA_VISIBLE_DEVICES");
      Verdict v = vis ? Verdict::Pass : Verdict::Info;
      std::string hint;
      if (d.mig_current) {
        s += std::string(", MIG ") + (*d.mig_current ? "enabled" : "disabled");
        if (d.mig_pending && *d.mig_pending != *d.mig_current) {
          s += std::string(" (") + (*d.mig_pending ? "enable" : "disable") + " pending a GPU reset)";
          v = Verdict::Warn;
          hint = "reset the GPU (nvidia-smi -r) or reboot to apply the pending MIG mode";
        }
        if (*d.mig_current) s += ": CUDA sees only the MIG instances named in CUDA_VISIBLE_DEVICES (MIG-<uuid>)";
      }
      j.add("device." + std::to_string(d.index), v, s, "NVML (index " + std::to_string(d.index) + (d.uuid.empty() ? "" : ", " + d.uuid) + ")", hint);
    }
  } else {
    for (const auto& d : h.cuda.devices) {
      j.add("device." + std::to_string(d.ordinal), Verdict::Pass,
            d.name + ", compute capability " + std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor) + ", " + gib(d.total_memory_bytes) + ", visible",
            "CUDA ordinal " + std::to_string(d.ordinal));
    }
  }

  // --- container --------------------------------------------------------------------------
  for (std::size_t i = 0; i < h.container_hints.size(); ++i) {
    j.add("container.hint." + std::to_string(i), Verdict::Info, h.container_hints[i], "root filesystem and environment");
  }
  if (auto it = h.container_env.find("NVIDIA_DRIVER_CAPABILITIES"); it != h.container_env.end()) {
    const std::string& caps = it->second;
    const bool compute = caps.find("compute") != std::string::npos || caps.find("all") != std::string::npos;
    j.add("container.driver-capabilities", compute ? Verdict::Info : Verdict::Warn, "NVIDIA_DRIVER_CAPABILITIES=" + caps,
          "environment", "add `compute,utility` to NVIDIA_DRIVER_CAPABILITIES so the runtime mounts libcuda and NVML");
  }
  if (h.nvidia_visible_devices && !nvd_hides && h.device_nodes.empty()) {
    j.add("container.runtime", Verdict::Warn, "NVIDIA_VISIBLE_DEVICES is set but no /dev/nvidia* node exists",
          "environment, /dev", "the container was not started with the NVIDIA runtime: use --gpus all / --runtime=nvidia");
  }

  // --- packages ---------------------------------------------------------------------------
  if (report.packages) {
    const PackageCudaFacts& p = *report.packages;
    const std::string& src = report.packages_source;
    if (p.needs_gpu()) {
      std::string reasons;
      for (const auto& r : p.gpu_reasons) reasons += (reasons.empty() ? "" : "; ") + r;
      j.add("packages.gpu", Verdict::Info, "the environment needs a CUDA GPU: " + reasons, src);
    } else {
      j.add("packages.gpu", Verdict::Info, "a CPU environment: no record needs CUDA", src);
    }

    if (!p.cpu_only_builds.empty()) {
      std::string list;
      for (const auto& c : p.cpu_only_builds) list += (list.empty() ? "" : "; ") + c;
      if (p.needs_gpu()) {
        j.add("packages.cpu-build", Verdict::Fail, "CPU fallback in a CUDA environment: " + list, src,
              "pin a CUDA build (e.g. `pytorch * cuda*`), remove `cpuonly`, and re-lock");
      } else {
        j.add("packages.cpu-build", Verdict::Info, list, src);
      }
    }

    const auto drv = driver_cuda(h);
    const std::string drv_str = driver_string(h);
    if (!p.cuda_version.empty()) {
      int req_major = 0, req_minor = 0;
      major_minor(p.cuda_version, req_major, req_minor);
      const std::string min_driver = minimum_driver_for_cuda(req_major, req_minor);
      const std::string rule = min_driver.empty() ? std::string()
                                                  : " (NVIDIA: CUDA " + std::to_string(req_major) + (req_major >= 11 ? ".x" : "." + std::to_string(req_minor)) +
                                                        " needs driver >= " + min_driver + ")";
      const std::string need_src = src + ": " + p.cuda_version_source;
      if (drv) {
        const std::string have = std::to_string(drv->first) + "." + std::to_string(drv->second);
        if (drv->first < req_major || (req_major < 11 && drv->first == req_major && drv->second < req_minor)) {
          j.add("packages.cuda-driver", Verdict::Fail,
                "built for CUDA " + p.cuda_version + " but the driver supports only CUDA " + have + rule, need_src,
                "upgrade the NVIDIA driver" + (min_driver.empty() ? std::string() : " to >= " + min_driver) +
                    ", or lock a CUDA build the driver supports (CONDA_OVERRIDE_CUDA=" + have + " envlock lock)");
        } else if (drv->first == req_major && drv->second < req_minor) {
          j.add("packages.cuda-driver", Verdict::Warn,
                "built for CUDA " + p.cuda_version + "; the driver supports CUDA " + have +
                    ": runs under CUDA minor version compatibility (no PTX JIT of newer PTX)",
                need_src, "upgrade the driver to the one shipped with CUDA " + p.cuda_version + " for full features");
        } else {
          j.add("packages.cuda-driver", Verdict::Pass, "built for CUDA " + p.cuda_version + "; the driver supports CUDA " + have, need_src);
        }
      } else if (!h.cuda_blocked.empty()) {
        j.add("packages.cuda-driver", Verdict::Fail,
              "built for CUDA " + p.cuda_version + " but the driver cannot initialise (" + h.cuda_blocked + "): no CUDA version",
              need_src, "fix the driver first (see driver.libcuda, driver.cuinit)", true);
      } else if (!drv_str.empty() && !min_driver.empty()) {
        const bool old = compare_dotted(drv_str, min_driver) < 0;
        j.add("packages.cuda-driver", old ? Verdict::Fail : Verdict::Pass,
              "built for CUDA " + p.cuda_version + "; driver " + drv_str + (old ? " is too old" : " is new enough") + rule, need_src,
              "upgrade the NVIDIA driver to >= " + min_driver);
      } else if (p.needs_gpu()) {
        j.add("packages.cuda-driver", Verdict::Fail, "built for CUDA " + p.cuda_version + " but no CUDA driver answered", need_src,
              container_hint, true);
      }
      if (!drv_str.empty() && !min_driver.empty() && drv && compare_dotted(drv_str, min_driver) < 0) {
        j.add("packages.driver-minimum", Verdict::Fail, "driver " + drv_str + " is below NVIDIA's minimum " + min_driver + " for CUDA " +
              std::to_string(req_major) + ".x", need_src, "upgrade the NVIDIA driver to >= " + min_driver);
      }

      const int min_cc = minimum_compute_capability_for_cuda(req_major);
      if (min_cc > 0) {
        std::vector<std::pair<std::string, int>> devices;
        for (const auto& d : h.nvml.devices) devices.emplace_back(d.name, d.cc_major * 10 + d.cc_minor);
        if (devices.empty()) {
          for (const auto& d : h.cuda.devices) devices.emplace_back(d.name, d.cc_major * 10 + d.cc_minor);
        }
        std::string too_old;
        for (const auto& [name, cc] : devices) {
          if (cc > 0 && cc < min_cc) {
            too_old += (too_old.empty() ? "" : ", ") + name + " (sm_" + std::to_string(cc) + ")";
          }
        }
        if (!too_old.empty()) {
          j.add("packages.compute-capability", Verdict::Fail,
                too_old + " below sm_" + std::to_string(min_cc) + ", the oldest GPU CUDA " + std::to_string(req_major) + " builds for",
                need_src, "use a newer GPU, or lock an older CUDA major");
        } else if (!devices.empty()) {
          j.add("packages.compute-capability", Verdict::Pass,
                "every GPU is at least sm_" + std::to_string(min_cc) + ", the oldest CUDA " + std::to_string(req_major) + " builds for", need_src);
        }
      }
    }

    // Every __cuda spec of the records, against the driver's CUDA version (as conda's solver
    // would check the __cuda virtual package).
    if (!p.cuda_specs.empty()) {
      if (!drv) {
        if (p.needs_gpu()) {
          j.add("packages.cuda-specs", Verdict::Fail, std::to_string(p.cuda_specs.size()) + " __cuda requirement(s) but no CUDA driver version",
                src, h.cuda_blocked.empty() ? container_hint : "fix the driver first (see driver.libcuda, driver.cuinit)", true);
        }
      } else {
        const std::string have = std::to_string(drv->first) + "." + std::to_string(drv->second);
        const auto host_version = Version::parse(have);
        std::vector<std::string> unmet;
        for (const auto& entry : p.cuda_specs) {
          const std::size_t colon = entry.find(": ");
          std::string spec = entry.substr(colon + 2);
          if (const auto paren = spec.find(" (constrains)"); paren != std::string::npos) spec.resize(paren);
          auto ms = MatchSpec::parse(spec);
          if (!ms) {
            unmet.push_back(entry + " (unparsable: " + ms.error().message + ")");
            continue;
          }
          if (ms->version && host_version && !ms->version->matches(*host_version)) unmet.push_back(entry);
        }
        if (unmet.empty()) {
          j.add("packages.cuda-specs", Verdict::Pass,
                "all " + std::to_string(p.cuda_specs.size()) + " __cuda requirement(s) met by CUDA " + have, src);
        } else {
          std::string list;
          for (const auto& u : unmet) list += (list.empty() ? "" : "; ") + u;
          j.add("packages.cuda-specs", Verdict::Fail, "the driver's CUDA " + have + " does not meet: " + list, src,
                "upgrade the NVIDIA driver, or re-lock for this driver (CONDA_OVERRIDE_CUDA=" + have + ")");
        }
      }
    }
  }
  return report;
}

int ProbeReport::exit_code() const {
  const bool need = packages && packages->needs_gpu();
  bool any_fail = false, package_fail = false, only_no_gpu = true;
  for (const auto& c : checks) {
    if (c.verdict != Verdict::Fail) continue;
    any_fail = true;
    if (c.id.starts_with("packages.") && !c.no_gpu) package_fail = true;
    if (!c.no_gpu) only_no_gpu = false;
  }
  if (!any_fail) return 0;
  if (need && !package_fail) {
    // No usable GPU: a no-GPU failure among the checks, and CUDA sees no device.
    const bool gpu_usable = host.cuda.outcome == VendorOutcome::Ok && host.cuda.init_result == 0 && !host.cuda.devices.empty();
    if (!gpu_usable) return 3;
    if (only_no_gpu) return 3;
  }
  return 1;
}

nlohmann::json ProbeReport::to_json() const {
  using nlohmann::json;
  json checks_json = json::array();
  Verdict worst = Verdict::Pass;
  for (const auto& c : checks) {
    json cj = {{"id", c.id}, {"verdict", to_string(c.verdict)}, {"summary", c.summary}, {"source", c.source}};
    if (!c.hint.empty()) cj["hint"] = c.hint;
    if (c.no_gpu) cj["no_gpu"] = true;
    checks_json.push_back(cj);
    if (c.verdict == Verdict::Fail || (c.verdict == Verdict::Warn && worst != Verdict::Fail)) worst = c.verdict;
  }
  const GpuHostFacts& h = host;
  json driver = {
      {"kernel_module", h.kernel_module},
      {"kernel_module_version", h.kernel_module_version},
      {"device_nodes", json::array()},
      {"libcuda", {{"library", h.cuda.library}, {"outcome", to_string(h.cuda.outcome)}, {"error", h.cuda.error}, {"step", h.cuda.step}}},
      {"nvml", {{"library", h.nvml.library}, {"outcome", to_string(h.nvml.outcome)}, {"error", h.nvml.error}, {"step", h.nvml.step},
                {"driver_version", h.nvml.driver_version}}},
  };
  for (const auto& n : h.device_nodes) driver["device_nodes"].push_back({{"path", n.path}, {"accessible", n.accessible}});
  if (h.cuda.init_result) {
    driver["libcuda"]["cuinit"] = *h.cuda.init_result;
    driver["libcuda"]["cuinit_name"] = h.cuda.init_error_name;
  }
  if (h.cuda.driver_version) driver["libcuda"]["driver_version"] = *h.cuda.driver_version;
  if (h.nvml.init_result) driver["nvml"]["init"] = *h.nvml.init_result;
  if (h.nvml.cuda_version) driver["nvml"]["cuda_version"] = *h.nvml.cuda_version;
  auto library_json = [](json& at, DriverLayout layout, const std::vector<LibraryAttempt>& tried) {
    at["layout"] = to_string(layout);
    at["tried"] = json::array();
    for (const auto& t : tried) at["tried"].push_back({{"path", t.path}, {"error", t.error}});
  };
  library_json(driver["libcuda"], h.cuda.layout, h.cuda.tried);
  library_json(driver["nvml"], h.nvml.layout, h.nvml.tried);
  if (h.driver_cuda) {
    driver["libcuda_own"] = {{"library", h.driver_cuda->library}, {"outcome", to_string(h.driver_cuda->outcome)}};
    if (h.driver_cuda->driver_version) driver["libcuda_own"]["driver_version"] = *h.driver_cuda->driver_version;
    if (h.driver_cuda->init_result) driver["libcuda_own"]["cuinit"] = *h.driver_cuda->init_result;
  }
  driver["compat"] = h.compat == CompatState::None ? "none" : h.compat == CompatState::Works ? "works" : "fails";
  driver["compat_libraries"] = h.compat_libraries;
  driver["wsl"] = h.wsl;
  driver["tegra_release"] = h.tegra_release;
  // The facts the chain settled on, each with its method; `cuda_version` is what __cuda gets.
  driver["driver_version"] = h.driver_version;
  driver["driver_version_method"] = h.driver_version_method;
  if (!h.cuda_version.empty()) driver["cuda_version"] = h.cuda_version;
  driver["cuda_version_method"] = h.cuda_version_method;
  if (!h.cuda_blocked.empty()) driver["cuda_blocked"] = h.cuda_blocked;  // why there is no cuda_version
  driver["methods"] = json::array();
  for (const auto& m : h.methods) {
    driver["methods"].push_back({{"method", m.method}, {"source", m.source}, {"ok", m.ok}, {"detail", m.detail}});
  }

  json devices = json::array();
  for (const auto& d : h.nvml.devices) {
    json dj = {{"index", d.index}, {"name", d.name}, {"uuid", d.uuid},
               {"compute_capability", std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor)},
               {"total_memory_bytes", d.total_memory_bytes},
               {"visible", visible_under(h.cuda_visible_devices, d.index, d.uuid, static_cast<unsigned>(h.nvml.devices.size()))},
               {"source", "nvml"}};
    if (d.mig_current) dj["mig"] = {{"current", *d.mig_current}, {"pending", d.mig_pending.value_or(*d.mig_current)}};
    devices.push_back(dj);
  }
  json cuda_devices = json::array();
  for (const auto& d : h.cuda.devices) {
    cuda_devices.push_back({{"ordinal", d.ordinal}, {"name", d.name},
                            {"compute_capability", std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor)},
                            {"total_memory_bytes", d.total_memory_bytes}});
  }
  json visibility = json::object();
  visibility["CUDA_VISIBLE_DEVICES"] = h.cuda_visible_devices ? json(*h.cuda_visible_devices) : json(nullptr);
  visibility["NVIDIA_VISIBLE_DEVICES"] = h.nvidia_visible_devices ? json(*h.nvidia_visible_devices) : json(nullptr);
  if (auto hidden = hidden_devices(h, h.cuda_visible_devices, h.nvidia_visible_devices)) {
    visibility["hidden_by"] = hidden->variable;
    visibility["installed"] = hidden->installed;
  }

  json out = {{"exit_code", exit_code()},
              {"verdict", to_string(worst)},
              {"checks", checks_json},
              {"driver", driver},
              {"devices", devices},
              {"cuda_devices", cuda_devices},
              {"visibility", visibility},
              {"container", {{"hints", h.container_hints}, {"environment", h.container_env}}}};
  if (packages) {
    out["packages"] = {{"source", packages_source},
                       {"needs_gpu", packages->needs_gpu()},
                       {"gpu_reasons", packages->gpu_reasons},
                       {"cuda_version", packages->cuda_version},
                       {"cuda_version_source", packages->cuda_version_source},
                       {"cuda_specs", packages->cuda_specs},
                       {"cpu_only_builds", packages->cpu_only_builds}};
  }
  return out;
}

std::string ProbeReport::to_text(bool color) const {
  std::string out;
  auto paint = [&](Verdict v) -> std::string {
    const char* word = v == Verdict::Pass ? "pass" : v == Verdict::Info ? "info" : v == Verdict::Warn ? "WARN" : "FAIL";
    if (!color) return word;
    const char* code = v == Verdict::Pass ? "32" : v == Verdict::Info ? "2" : v == Verdict::Warn ? "33" : "31;1";
    return std::string("\033[") + code + "m" + word + "\033[0m";
  };
  // Summaries quote the host and the lockfile (NVML strings, variables, build strings, a /proc
  // line): every control byte, newline included, is escaped here, so no data can move the
  // cursor or forge a report line.
  for (const auto& c : checks) {
    out += paint(c.verdict) + "  " + printable(c.id) + ": " + printable(c.summary) + "\n";
    out += "      from " + printable(c.source) + "\n";
    if (!c.hint.empty()) out += "      hint: " + printable(c.hint) + "\n";
  }
  const int code = exit_code();
  out += code == 0 ? "probe: pass\n" : code == 3 ? "probe: no usable GPU, and the environment needs one (exit 3)\n" : "probe: FAIL (exit 1)\n";
  return out;
}

namespace {
std::map<std::string, std::string> recorded_host_facts_raw(const GpuHostFacts& h) {
  std::map<std::string, std::string> m;
  // The CPU level matters too: vectorised kernels (AVX2 vs AVX-512) change floating-point results.
  m["platform"] = Platform::host().to_string();
  m["cpu"] = detect_microarchitecture();
  if (!h.driver_version.empty()) m["driver_version"] = h.driver_version;
  if (!h.cuda_version.empty()) m["cuda_driver_version"] = h.cuda_version;
  m["gpu_count"] = std::to_string(h.cuda.devices.size());
  for (const auto& d : h.cuda.devices) {
    const std::string k = "gpu." + std::to_string(d.ordinal);
    m[k + ".name"] = d.name;
    m[k + ".compute_capability"] = std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor);
    m[k + ".memory"] = gib(d.total_memory_bytes);
  }
  return m;
}

}  // namespace

std::map<std::string, std::string> recorded_host_facts(const GpuHostFacts& h) {
  std::map<std::string, std::string> m = recorded_host_facts_raw(h);
  // Written into the lockfile: valid UTF-8 (NVML answers raw bytes), no control characters.
  for (auto& [key, value] : m) value = printable(escape_invalid_utf8(value));
  return m;
}

}  // namespace envlock
