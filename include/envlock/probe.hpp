#pragma once
// envlock/probe.hpp — is the GPU usable here, and does the driver fit what the packages need?
//
// `envlock probe` answers before a job is queued. It gathers facts in three layers:
//   1. the driver: the kernel module (`/proc/driver/nvidia/version`), the device nodes
//      (`/dev/nvidia*`, readable and writable by this user), `libcuda.so.1` and
//      `libnvidia-ml.so.1` loaded with dlopen (no link-time dependency), the `cuInit` result with
//      the CUDA error name, `cuDriverGetVersion` and NVML's driver version string;
//   2. the devices: for each GPU its name, compute capability, total memory, whether it is
//      visible under CUDA_VISIBLE_DEVICES / NVIDIA_VISIBLE_DEVICES, and its MIG mode;
//      container hints (`/.dockerenv`, `/run/.containerenv`, cgroup, NVIDIA container variables);
//   3. the packages (a lockfile environment or an installed prefix): the CUDA version they were
//      built for (`__cuda` depends and constrains, `cuda-version`, `cudatoolkit`, `cuda-cudart`)
//      against what the driver supports (NVIDIA's minimum driver per CUDA major, see
//      docs/probe.md for the release-note sources), CPU-only framework builds in an environment
//      that asks for CUDA, and the lowest compute capability the CUDA major still supports
//      against the devices found.
// Every vendor call runs in a forked child with a timeout: a crashing or hanging driver library
// kills only the child, and the probe reports where it died. Tests point the probe at fake
// libraries (ENVLOCK_LIBCUDA, ENVLOCK_LIBNVML) and a fake root folder; the code path is the same
// on a real NVIDIA host.
//
// Exit codes of `envlock probe` (ProbeReport::exit_code): 0 every check passed (warnings
// allowed), 1 a check failed, 3 the packages need a GPU and this host has no usable one (and
// nothing else failed in the packages themselves).

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "envlock/host.hpp"
#include "envlock/package_record.hpp"
#include "envlock/virtual_package.hpp"

namespace envlock {

// ---------------------------------------------------------------------------------------------
// Vendor queries (each in a forked child)

/// How a query of a vendor library ended.
enum class VendorOutcome {
  Ok,              ///< the library answered (its init call may still have returned an error)
  LibraryMissing,  ///< dlopen failed (`error` holds dlerror())
  SymbolMissing,   ///< a required symbol is absent: a half-installed driver (`error` names it)
  Crashed,         ///< the child died from a signal inside `step` (`error` names the signal)
  TimedOut,        ///< the child did not finish within the timeout inside `step`
  ChildFailed,     ///< fork/pipe failed; `error` has strerror
};

/// "ok", "library-missing", "symbol-missing", "crashed", "timed-out", "child-failed".
const char* to_string(VendorOutcome outcome);

/// Where a host keeps the NVIDIA user-space libraries (docs/probe.md, "Layouts").
enum class DriverLayout {
  Override,    ///< ENVLOCK_LIBCUDA / ENVLOCK_LIBNVML named the file (tests, fake drivers)
  LoaderPath,  ///< what the dynamic loader finds: LD_LIBRARY_PATH, /etc/ld.so.conf, the soname
  System,      ///< a distribution folder (/usr/lib/x86_64-linux-gnu, /usr/lib64, /usr/lib64/nvidia)
  Wsl,         ///< WSL2: /usr/lib/wsl/lib, the GPU behind /dev/dxg
  Tegra,       ///< Jetson/L4T: /usr/lib/aarch64-linux-gnu/tegra (or .../nvidia), no NVML
  Container,   ///< folders a container runtime injects: /usr/local/nvidia/lib64, /.singularity.d/libs
  Compat,      ///< a CUDA forward-compatibility package: /usr/local/cuda*/compat
};
/// "override", "loader-path", "system", "wsl", "tegra", "container", "compat".
const char* to_string(DriverLayout layout);

/// The layout a library file belongs to, by its folder (as on the host, without a probe root):
/// `/usr/local/cuda-12.8/compat/libcuda.so.1` is Compat, `/usr/lib/wsl/lib/...` Wsl, and so on;
/// `fallback` for any other folder.
DriverLayout layout_of_library(const std::string& host_path, DriverLayout fallback);

/// One place to try a vendor library.
struct LibraryCandidate {
  std::string path;  ///< what dlopen gets: a soname (the loader path) or a file under the root
  DriverLayout layout = DriverLayout::LoaderPath;
};

/// A library that was tried and did not load, and why (dlerror, without the probe root).
struct LibraryAttempt {
  std::string path;
  std::string error;
};

/// Every place `soname` ("libcuda.so.1", "libnvidia-ml.so.1") may be under `root`, in search
/// order: the loader path (the soname itself when `root` is "/"; under another root the
/// `ld_library_path` folders and the folders of `etc/ld.so.conf` and `etc/ld.so.conf.d/*.conf`,
/// re-rooted), the distribution folders, `/usr/lib/wsl/lib`, the Tegra folders, the container
/// folders, then every `/usr/local/cuda*/compat` (and `compat/lib`), by name. Only files that exist
/// are listed (the soname always is, when `root` is "/"); no duplicates.
std::vector<LibraryCandidate> driver_library_candidates(const std::filesystem::path& root, const std::string& soname,
                                                        const std::optional<std::string>& ld_library_path);

/// One GPU as the CUDA driver API sees it (ordinals count visible devices only).
struct CudaDevice {
  int ordinal = 0;
  std::string name;
  int cc_major = 0;  ///< compute capability, e.g. 9 and 0 for sm_90
  int cc_minor = 0;
  std::uint64_t total_memory_bytes = 0;
};

/// What libcuda.so.1 answered.
struct CudaDriverQuery {
  std::string library;          ///< the file that was loaded (as on the host), else the last one tried
  DriverLayout layout = DriverLayout::LoaderPath;  ///< the layout of `library`
  std::vector<LibraryAttempt> tried;  ///< candidates that did not load, in order
  VendorOutcome outcome = VendorOutcome::LibraryMissing;
  std::string error;            ///< dlerror text, missing symbol, or signal name
  std::string step;             ///< the vendor function running when the child crashed/hung
  std::optional<int> init_result;     ///< cuInit(0)'s CUresult
  std::string init_error_name;        ///< from cuGetErrorName, e.g. "CUDA_ERROR_NO_DEVICE"
  std::optional<int> driver_version;  ///< cuDriverGetVersion, e.g. 12040 for CUDA 12.4
  std::vector<CudaDevice> devices;    ///< visible devices, when cuInit succeeded
};

/// One GPU as NVML sees it: every physical device, whatever CUDA_VISIBLE_DEVICES says.
struct NvmlDevice {
  unsigned index = 0;
  std::string name;
  std::string uuid;  ///< "GPU-8c7b...", empty when NVML does not say
  int cc_major = 0;
  int cc_minor = 0;
  std::uint64_t total_memory_bytes = 0;
  std::optional<bool> mig_current;  ///< nullopt: the device does not support MIG
  std::optional<bool> mig_pending;
};

/// What libnvidia-ml.so.1 answered.
struct NvmlQuery {
  std::string library;  ///< the file that was loaded (as on the host), else the last one tried
  DriverLayout layout = DriverLayout::LoaderPath;
  std::vector<LibraryAttempt> tried;
  /// nvmlSystemGetCudaDriverVersion_v2 (else the v1 call): the CUDA version, e.g. 12040. NVML's
  /// documentation says it is "retrieved from the shared library" (cuDriverGetVersion).
  std::optional<int> cuda_version;
  VendorOutcome outcome = VendorOutcome::LibraryMissing;
  std::string error;
  std::string step;
  std::optional<int> init_result;  ///< nvmlInit_v2's nvmlReturn_t
  std::string init_error;          ///< nvmlErrorString of a failed init
  std::string driver_version;      ///< nvmlSystemGetDriverVersion, e.g. "550.54.14"
  std::vector<NvmlDevice> devices;
};

/// Loads `library` with dlopen in a forked child and calls cuInit(0), cuGetErrorName,
/// cuDriverGetVersion, cuDeviceGetCount, and per device cuDeviceGet, cuDeviceGetName,
/// cuDeviceGetAttribute (compute capability) and cuDeviceTotalMem_v2. Waits at most
/// `timeout_ms` milliseconds, then kills the child. Never throws; a crash is an outcome.
CudaDriverQuery query_cuda_driver(const std::string& library = "libcuda.so.1", int timeout_ms = 10000);

/// The same, trying each candidate in order in one child: the first that loads is used (as the
/// loader would), the others are listed in `tried`. `unmask` unsets CUDA_VISIBLE_DEVICES in the
/// child before loading (what conda's detection does), to count the devices the driver has.
/// Paths in the answer are shown without `root`.
CudaDriverQuery query_cuda_driver(const std::vector<LibraryCandidate>& candidates, int timeout_ms, bool unmask,
                                  const std::filesystem::path& root = "/");

/// Loads `library` in a forked child and calls nvmlInit_v2, nvmlSystemGetDriverVersion,
/// nvmlDeviceGetCount_v2 and per device nvmlDeviceGetHandleByIndex_v2, nvmlDeviceGetName,
/// nvmlDeviceGetUUID, nvmlDeviceGetMemoryInfo, nvmlDeviceGetCudaComputeCapability,
/// nvmlDeviceGetMigMode, then nvmlShutdown. Same child and timeout rules as query_cuda_driver.
NvmlQuery query_nvml(const std::string& library = "libnvidia-ml.so.1", int timeout_ms = 10000);
/// The same over candidates, as query_cuda_driver.
NvmlQuery query_nvml(const std::vector<LibraryCandidate>& candidates, int timeout_ms, const std::filesystem::path& root = "/");

/// What `nvidia-smi -q -x` said (run in a child with the same timeout, stdin from /dev/null).
struct NvidiaSmiAnswer {
  std::string command;         ///< the program run, as on the host
  std::string driver_version;  ///< <driver_version>, e.g. "550.54.14"
  std::string cuda_version;    ///< <cuda_version>, e.g. "12.4"
  std::string error;           ///< why it gave nothing: not found, exit status, timeout, not XML
};

/// Runs `program -q -x` (an absolute path) and reads the two versions with libxml2 (no network,
/// no entities). Never throws.
NvidiaSmiAnswer query_nvidia_smi(const std::string& program, int timeout_ms, const std::filesystem::path& root = "/");

/// Whether a cuInit result leaves the driver counted as present: CUDA_SUCCESS, or an error that
/// only says no device is visible to this process (CUDA_ERROR_NO_DEVICE 100,
/// CUDA_ERROR_INVALID_DEVICE 101 — what CUDA_VISIBLE_DEVICES and NVIDIA_VISIBLE_DEVICES cause).
bool cuda_init_counts(int init_result);

/// "12.4" for a cuDriverGetVersion value of 12040 (major = v / 1000, minor = v % 1000 / 10).
std::string cuda_version_string(int driver_version);

/// The name of a CUresult when the library cannot say (cuda.h's names for the codes a probe
/// meets: 0, 1, 2, 3, 4, 34, 35, 100, 101, 304, 803, 804, 999); "CUDA error <n>" otherwise.
std::string cuda_error_name(int code);

// ---------------------------------------------------------------------------------------------
// Host facts

/// The method behind a driver fact, or why a method could not say (the fallback chain of
/// docs/probe.md: NVML, libcuda, /proc/driver/nvidia/version, nvidia-smi -q -x).
struct MethodAttempt {
  std::string method;  ///< "NVML", "libcuda", "/proc/driver/nvidia/version", "nvidia-smi -q -x"
  std::string source;  ///< the file loaded or read, or the program run
  bool ok = false;
  std::string detail;  ///< what it gave, or why it failed
};

/// How a CUDA forward-compatibility library fared.
enum class CompatState {
  None,   ///< the libcuda in use is not a forward-compatibility one
  Works,  ///< it initialises: the newer CUDA works on this device
  Fails,  ///< cuInit failed with 803 or 804: the kernel driver's CUDA counts
};

/// The NVIDIA driver as every method saw it, with the facts the chain settled on.
struct DriverFacts {
  bool kernel_module = false;          ///< /proc/driver/nvidia/version exists
  std::string kernel_module_version;   ///< e.g. "550.54.14"; empty when not found in the file
  std::string kernel_module_line;      ///< its `NVRM version:` line (else its first line), trimmed
  bool wsl = false;                    ///< /dev/dxg exists (WSL2's GPU paravirtualisation)
  std::string tegra_release;           ///< "R35.4.1" from etc/nv_tegra_release; empty: not L4T
  std::vector<std::string> compat_libraries;  ///< every /usr/local/cuda*/compat libcuda present
  CudaDriverQuery cuda;                ///< the libcuda the loader picks (first candidate loading)
  /// The driver's own libcuda, asked when `cuda` is a forward-compatibility library.
  std::optional<CudaDriverQuery> driver_cuda;
  /// `cuda` again with CUDA_VISIBLE_DEVICES unset, when cuInit saw no device with it set.
  std::optional<CudaDriverQuery> unmasked;
  NvmlQuery nvml;
  std::optional<NvidiaSmiAnswer> nvidia_smi;  ///< run only when the other methods left a fact open
  CompatState compat = CompatState::None;

  std::string driver_version;         ///< the driver release, e.g. "550.54.14"
  std::string driver_version_method;  ///< e.g. "NVML nvmlSystemGetDriverVersion"
  /// The CUDA version `__cuda` gets, "12.4"; empty when no initialising driver says one.
  std::string cuda_version;
  std::string cuda_version_method;    ///< e.g. "libcuda cuDriverGetVersion (/usr/lib/wsl/lib/libcuda.so.1)"
  /// Why there is no CUDA version although a libcuda is there: it crashed, hung, lacks a symbol
  /// or cuInit failed ("/usr/lib/x86_64-linux-gnu/libcuda.so.1 crashed (SIGSEGV) in cuInit");
  /// empty otherwise. Then no method's version is used, whatever NVML or nvidia-smi say.
  std::string cuda_blocked;
  std::vector<MethodAttempt> methods;  ///< every method tried, in chain order
};

/// The driver is there but this process sees no device, and the variable that hid them.
struct HiddenDevices {
  std::string variable;   ///< "CUDA_VISIBLE_DEVICES" or "NVIDIA_VISIBLE_DEVICES"
  std::string value;      ///< its value, possibly empty
  unsigned installed = 0;  ///< devices the driver has (libcuda without the variable, or NVML); 0: unknown
  /// "driver present, no device visible to this process: CUDA_VISIBLE_DEVICES="" hides the 2
  /// GPU(s) the driver has"
  [[nodiscard]] std::string to_string() const;
};

/// When cuInit said no device is visible (CUDA_ERROR_NO_DEVICE, CUDA_ERROR_INVALID_DEVICE) while
/// the driver has devices with CUDA_VISIBLE_DEVICES unset (or NVML lists some), or
/// NVIDIA_VISIBLE_DEVICES is `void`, `none` or empty: who hid them. nullopt otherwise (a host
/// with no device at all is not a visibility matter).
std::optional<HiddenDevices> hidden_devices(const DriverFacts& facts, const std::optional<std::string>& cuda_visible_devices,
                                            const std::optional<std::string>& nvidia_visible_devices);

/// (read_host_file(), the reader of /proc/driver/nvidia/version and the other driver files, is
/// declared with the one reader of host files in envlock/host.hpp.)

/// The driver release in an `NVRM version:` line of /proc/driver/nvidia/version:
/// "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 ..." and
/// "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.14  Release Build ..." give
/// "535.104.05" and "550.54.14": two or three dot-separated numbers of at most 9 digits each after
/// `Module` (and an optional `for <arch>`). Empty when there is none. Linear in the line's length,
/// whatever it holds (no pattern matcher).
std::string parse_kernel_module_version(std::string_view line);

/// What /proc/driver/nvidia/version says: its `NVRM version:` line and the driver release in it.
struct NvrmVersion {
  std::string line;     ///< the first line holding `NVRM version:` (else the first line), trimmed
  std::string version;  ///< parse_kernel_module_version() of it from `NVRM version:` on; empty when none
};

/// The one reader of /proc/driver/nvidia/version text, for probe and snapshot capture alike: the
/// first `NVRM version:` line that holds a release (parse_kernel_module_version), else the first
/// `NVRM version:` line with an empty version, else the first line with an empty version. Linear
/// in the text's length; never throws.
NvrmVersion parse_nvrm_version(std::string_view text);

/// Looks for the driver in every layout under `host.root` and settles the driver release and the
/// CUDA version: the release from NVML, else /proc/driver/nvidia/version, else nvidia-smi; the
/// CUDA version from the libcuda that initialises (cuInit succeeds, or fails only because no
/// device is visible: CUDA_ERROR_NO_DEVICE, CUDA_ERROR_INVALID_DEVICE); when that libcuda is a
/// forward-compatibility one failing with 803/804, from the driver's own libcuda; when no libcuda
/// loads, from NVML, else nvidia-smi. A libcuda that is there but cannot initialise — cuInit
/// fails, or it crashes, hangs or lacks a symbol in any call — gives no CUDA version, whatever
/// the other methods say (DriverFacts::cuda_blocked says why). Never throws.
DriverFacts detect_driver(const Host& host);

/// A `/dev/nvidia*` node and whether this user may open it for reading and writing.
struct DeviceNode {
  std::string path;  ///< as on the host, e.g. "/dev/nvidia0" (without the probe root)
  bool accessible = false;
};

/// Everything the probe learned about the host, before any verdict.
struct GpuHostFacts : DriverFacts {
  std::vector<DeviceNode> device_nodes;  ///< /dev/nvidia*, /dev/dxg, /dev/nvmap, /dev/nvhost-*; sorted
  std::optional<std::string> cuda_visible_devices;    ///< the variable, when set
  std::optional<std::string> nvidia_visible_devices;  ///< the variable, when set
  std::vector<std::string> container_hints;  ///< e.g. "/.dockerenv exists", sorted
  std::map<std::string, std::string> container_env;  ///< NVIDIA_* container runtime variables
};

/// Gathers the host facts (files under `host.root`, both vendor queries).
GpuHostFacts gather_host_facts(const Host& host);

/// Whether physical device `index` (with `uuid`, possibly empty) is visible under a
/// CUDA_VISIBLE_DEVICES value (comma-separated indices, `GPU-`/`MIG-` UUID prefixes; as the CUDA
/// driver does, the list ends at the first entry that names no device). nullopt value: all
/// visible. An empty value hides every device.
bool visible_under(const std::optional<std::string>& cuda_visible_devices, unsigned index,
                   const std::string& uuid, unsigned device_count);

// ---------------------------------------------------------------------------------------------
// Package facts

/// NVIDIA's minimum Linux x86_64 driver for applications built with CUDA `major` (minor version
/// compatibility from CUDA 11 on; for 10.x and older the toolkit's own driver), e.g. "525.60.13"
/// for 12. `minor` matters only before CUDA 11. Empty when the version is unknown to envlock.
std::string minimum_driver_for_cuda(int major, int minor);

/// The lowest compute capability (major*10+minor) that CUDA `major` still builds for: 30 for
/// CUDA 10, 35 for 11, 50 for 12, 75 for 13. 0 when unknown.
int minimum_compute_capability_for_cuda(int major);

/// What the packages of an environment need from the GPU side.
struct PackageCudaFacts {
  /// The CUDA version the packages were built for ("12.4"), and the record that says so
  /// ("cuda-version 12.4"). Empty when no record names one.
  std::string cuda_version;
  std::string cuda_version_source;
  /// Every `__cuda` MatchSpec of the records' depends and constrains, as "pkg: spec".
  std::vector<std::string> cuda_specs;
  /// Why the environment needs a GPU ("pytorch 2.3.1 (cuda120_py312...) depends on __cuda",
  /// "the lockfile was solved with __cuda=12.4"); empty: a CPU environment.
  std::vector<std::string> gpu_reasons;
  /// CPU-only builds of GPU frameworks ("pytorch 2.3.1 build cpu_generic_py312h_0",
  /// "cpuonly 2.0 is installed").
  std::vector<std::string> cpu_only_builds;
  [[nodiscard]] bool needs_gpu() const { return !gpu_reasons.empty(); }
};

/// Reads the GPU side of `records`. `requested` are the manifest's specs (a spec naming cuda,
/// `pytorch-gpu`, `*cuda*` builds marks a CUDA environment); `solved_with` the lockfile's
/// virtual packages (a `__cuda` among them marks one too).
PackageCudaFacts analyze_packages(const std::vector<RepoDataRecord>& records,
                                  const std::vector<std::string>& requested,
                                  const std::vector<VirtualPackage>& solved_with);

// ---------------------------------------------------------------------------------------------
// Verdicts

enum class Verdict { Pass, Info, Warn, Fail };
/// "pass", "info", "warn", "fail".
const char* to_string(Verdict verdict);

/// One line of the report.
struct ProbeCheck {
  std::string id;       ///< stable key, e.g. "driver.cuinit", "device.0", "packages.cpu-build"
  Verdict verdict = Verdict::Info;
  std::string summary;  ///< what was found, one line
  std::string source;   ///< how it was found: a file, a library call, a record
  std::string hint;     ///< what to do (only for warn/fail)
  bool no_gpu = false;  ///< a failure that means "no usable GPU on this host" (exit code 3)
};

struct ProbeReport {
  GpuHostFacts host;
  std::optional<PackageCudaFacts> packages;
  std::string packages_source;  ///< "envlock.lock environment train (linux-64)" or the prefix
  std::vector<ProbeCheck> checks;

  /// 0 all pass (warnings allowed), 3 packages need a GPU and none is usable while the packages
  /// themselves are fine, 1 any other failure.
  [[nodiscard]] int exit_code() const;
  /// The report as JSON: {"exit_code", "verdict", "checks": [...], "driver": {...},
  /// "devices": [...], "container": {...}, "packages": {...}}; keys sorted, deterministic.
  [[nodiscard]] nlohmann::json to_json() const;
  /// Human text: one line per check with its verdict, hints indented below.
  [[nodiscard]] std::string to_text(bool color) const;
};

/// Judges the facts: driver checks, device checks, container hints and, with `packages`, the
/// package checks.
ProbeReport evaluate_probe(GpuHostFacts host, std::optional<PackageCudaFacts> packages,
                           std::string packages_source = {});

/// The probe facts worth recording next to a reference value (lockfile `recorded_host`):
/// platform (conda subdir), CPU level (x86-64 psABI level or machine name), driver version,
/// CUDA driver version, GPU count and per GPU name, compute capability and memory.
/// No host names, user names or paths. Keys sorted. Values are valid UTF-8 without control
/// characters (invalid bytes and control characters written as `\xNN`): they go into the lockfile.
std::map<std::string, std::string> recorded_host_facts(const GpuHostFacts& host);

}  // namespace envlock
