#pragma once
// envlock/host_facts.hpp — the facts of a host that a snapshot records and a target is checked
// against: os-release, kernel, glibc and libstdc++ (ELF symbol versions), CPU architecture and
// x86-64 level, page size, the NVIDIA driver and GPUs, system packages (dpkg, rpm) and the pip
// packages of system Pythons; the parsers of the files and command outputs they come from.
// Module envlock_host (src/host), beside the seam they are read through (envlock/host.hpp) and
// the virtual packages (envlock/virtual_packages.hpp). Capturing them through a Host is
// capture_host_facts (envlock/snapshot.hpp).
//
// Standards followed: os-release(5), deb822 (/var/lib/dpkg/status), ELF gABI + the GNU symbol
// versioning extension (.gnu.version_d), NVIDIA's nvidia-smi -q -x log format.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "envlock/result.hpp"

namespace envlock {

/// /etc/os-release (os-release(5)); empty strings for keys the file lacks.
struct OsRelease {
  std::string id;                ///< "debian", "ubuntu", "rhel"
  std::string version_id;        ///< "12", "22.04"
  std::string version_codename;  ///< "bookworm"
  std::string pretty_name;       ///< "Debian GNU/Linux 12 (bookworm)"
  friend bool operator==(const OsRelease&, const OsRelease&) = default;
};

/// Parses os-release text: KEY=value lines, values optionally in single or double quotes with
/// shell backslash escapes, `#` comments. `source` names the file in errors. A line that is not
/// KEY=value is an error naming file:line.
Result<OsRelease> parse_os_release(std::string_view text, const std::string& source);

/// The symbol versions an ELF shared object defines (its `.gnu.version_d` section), e.g.
/// "GLIBC_2.2.5", "GLIBCXX_3.4.30", "CXXABI_1.3.13", and its machine.
struct ElfVersionInfo {
  std::string machine;                ///< "x86_64", "aarch64", "ppc64le", "s390x", ... (from e_machine)
  std::vector<std::string> versions;  ///< definitions in file order, the base (soname) entry excluded
};

/// Reads `path` as an ELF file (32/64-bit, either byte order) and lists its version definitions.
/// Errors: Io when unreadable; Parse (naming the file and the offset) when it is not ELF, is
/// truncated, or a table points outside the file. A file without `.gnu.version_d` gives an empty
/// list.
Result<ElfVersionInfo> read_elf_version_definitions(const std::filesystem::path& path);

/// The greatest version among `versions` named `<prefix><n>.<n>...` ("GLIBCXX_" -> "3.4.30"),
/// compared number by number; empty when none has that prefix.
std::string max_symbol_version(const std::vector<std::string>& versions, std::string_view prefix);

/// Compares dotted numeric versions ("2.17" < "2.36", "3.4.9" < "3.4.30"): negative, 0, positive.
/// Non-numeric parts compare as 0.
int compare_dotted(std::string_view a, std::string_view b);

/// One installed system package.
struct SystemPackage {
  std::string name;
  std::string version;       ///< dpkg: with epoch ("1:2.3-4"); rpm: version-release
  std::string architecture;  ///< "amd64", "all", "x86_64", "noarch"
  std::string status;        ///< dpkg's Status field ("install ok installed"); "installed" for rpm
  friend bool operator==(const SystemPackage&, const SystemPackage&) = default;
};

/// A fact capture could not read (or read only in part). The snapshot is then partial and says so.
struct CaptureProblem {
  std::string where;    ///< file (with ":line" when one line is at fault), prefix or fact
  std::string message;
  friend bool operator==(const CaptureProblem&, const CaptureProblem&) = default;
};

/// Parses /var/lib/dpkg/status (deb822 stanzas separated by blank lines, continuation lines start
/// with a space or tab). Every stanza is kept, whatever its status, sorted by name then
/// architecture. A stanza is faulty when it has no Package field, a field line without ':', or a
/// continuation line before any field. With `warnings` null the first faulty stanza is the error
/// (Parse, where = "file:line"); otherwise each faulty stanza is skipped and reported there
/// (where = "file:line" of the faulty line, message naming the stanza's package when it has one
/// and its line range) and every good stanza is still returned.
Result<std::vector<SystemPackage>> parse_dpkg_status(std::string_view text, const std::string& source,
                                                     std::vector<CaptureProblem>* warnings = nullptr);

/// Parses `rpm -qa --queryformat '%{NAME}\t%{EPOCHNUM}:%{VERSION}-%{RELEASE}\t%{ARCH}\n'` output
/// (the query capture runs); epoch 0 is dropped from the version. A line with another shape is
/// faulty. With `warnings` null the first faulty line is the error (Parse, where =
/// "source:line"); otherwise each faulty line is skipped and reported there (where =
/// "source:line", the message quoting the line and saying how to produce the output; past the
/// tenth, one more entry counts the rest from the first of them) and every good line is still
/// returned, as parse_dpkg_status() keeps the good stanzas.
Result<std::vector<SystemPackage>> parse_rpm_query(std::string_view text, const std::string& source,
                                                   std::vector<CaptureProblem>* warnings = nullptr);

/// One NVIDIA GPU.
struct GpuInfo {
  std::string name;                ///< product name, e.g. "NVIDIA A100-SXM4-80GB"
  std::string architecture;        ///< "Ampere", when the driver reports it
  std::string compute_capability;  ///< "8.0": nvidia-smi's <compute_cap> when the output has one; else empty
  std::optional<std::uint64_t> memory_mib;  ///< total framebuffer memory in MiB
  std::string uuid;                ///< only with CaptureOptions::include_ids
  friend bool operator==(const GpuInfo&, const GpuInfo&) = default;
};

/// NVIDIA driver facts.
struct NvidiaFacts {
  std::string driver_version;  ///< "535.104.05"
  std::string cuda_version;    ///< the newest CUDA the driver supports, "12.2"; may be empty
  std::vector<GpuInfo> gpus;   ///< in bus order as the driver lists them
  /// Facts of one thing that disagree are kept both, with a CaptureProblem naming the sources:
  /// nvidia-smi's <driver_version> when it differs from the loaded kernel module's
  /// (/proc/driver/nvidia/version, which driver_version holds) — a driver upgraded without a reboot;
  std::string smi_driver_version;
  /// and the user-space libcuda's version (the `<version>` of the libcuda.so.<version> file that
  /// libcuda.so.1 leads to) when it differs from driver_version. Empty when they agree.
  std::string libcuda_version;
  friend bool operator==(const NvidiaFacts&, const NvidiaFacts&) = default;
};

/// The driver version from /proc/driver/nvidia/version text ("NVRM version: NVIDIA UNIX x86_64
/// Kernel Module  535.104.05  ..."); Parse error naming `source` when no version is found.
Result<std::string> parse_nvidia_proc_version(std::string_view text, const std::string& source);

/// Reads `nvidia-smi -q -x` output (any DTD version): driver_version, cuda_version, and per
/// <gpu>: product_name, product_architecture, fb_memory_usage/total, uuid (kept only when
/// `include_ids`). Errors (Parse) name `source` and the XML line for malformed XML or a root
/// element other than nvidia_smi_log.
Result<NvidiaFacts> parse_nvidia_smi_xml(std::string_view text, const std::string& source, bool include_ids);

/// The pip side of one system Python's site folder (`/usr/lib/python3/dist-packages`,
/// `/usr/local/lib/python3.11/site-packages`, ...): every `*.dist-info` there, as `pip list`
/// shows it. Debian's own python3-* packages (INSTALLER absent or "debian") are listed too; their
/// files are the system packages'.
struct SystemPythonSite {
  std::string site;  ///< host path of the folder
  /// name, version, installer ("pip", "uv", "" when none), source (PipSource name: "index",
  /// "editable", ...), sorted by PEP 503 name.
  struct Package {
    std::string name, version, installer, source;
    friend bool operator==(const Package&, const Package&) = default;
  };
  std::vector<Package> packages;
  friend bool operator==(const SystemPythonSite&, const SystemPythonSite&) = default;
};

/// Everything capture records about the host outside conda prefixes.
struct HostFacts {
  std::string platform;            ///< conda subdir of the host, e.g. "linux-64"
  OsRelease os;
  std::string kernel;              ///< kernel release, "6.1.0-18-amd64"
  std::string glibc;               ///< "2.36": the newest GLIBC_ version libc.so.6 defines
  std::string libstdcxx_glibcxx;   ///< "3.4.30": newest GLIBCXX_ of the system libstdc++.so.6
  std::string libstdcxx_cxxabi;    ///< "1.3.13": newest CXXABI_
  std::string cpu_arch;            ///< "x86_64", "aarch64"
  std::string cpu_level;           ///< __archspec build: "x86_64_v3"; the arch elsewhere
  std::optional<std::uint64_t> page_size;  ///< bytes
  std::optional<NvidiaFacts> nvidia;       ///< absent: no NVIDIA driver found
  std::string system_package_manager;      ///< "dpkg", "rpm", or empty
  std::vector<SystemPackage> system_packages;  ///< sorted by name, architecture
  /// pip packages of the system Pythons, per site folder that holds any (sorted by path):
  /// /usr/lib/python3*/{site,dist}-packages, /usr/local/lib/python3*/{site,dist}-packages,
  /// /usr/lib64/python3*/site-packages. A host without conda is a snapshot of these too.
  std::vector<SystemPythonSite> system_python;
  friend bool operator==(const HostFacts&, const HostFacts&) = default;
};

}  // namespace envlock
