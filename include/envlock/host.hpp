#pragma once
// envlock/host.hpp — the one seam over the machine envlock reads host facts from.
//
// Every host fact envlock uses is read through a `Host`: the virtual packages of `envlock install`,
// `envlock info` and a snapshot's compatibility check (detect_virtual_packages,
// envlock/virtual_packages.hpp), the NVIDIA driver and GPUs of `envlock probe` and a reference
// run (detect_driver, gather_host_facts, envlock/probe.hpp), and `envlock snapshot capture`
// (capture_host_facts, envlock/snapshot.hpp). A Host is
//   - a root folder: files are read under it (`/` for this machine, a host tree in tests or a
//     mounted disk), with `live` saying whether it is the running machine;
//   - an environment lookup (CUDA_VISIBLE_DEVICES, NVIDIA_*, CONDA_OVERRIDE_*, LD_LIBRARY_PATH);
//   - a command runner (nvidia-smi, rpm) for capture;
//   - the NVIDIA libraries and program to use instead of searching the layouts (fake drivers);
//   - the facts only the running process can ask (uname, gnu_get_libc_version, CPUID, libcuda),
//     one function each.
// Host::system() is this machine with every part filled in; tests build a Host (or take
// Host::tree(), or Host::system() and replace parts) to give exact answers: ninja's
// DiskInterface, one interface to the outside world that tests fill with a fake.
//
// A part left empty reads as "nothing": no variable set, no command run, no kernel release, no
// driver. Each reader says what it does with an empty part.

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "envlock/result.hpp"

namespace envlock {

struct Host {
  // -- files -----------------------------------------------------------------------------------
  /// The host's `/`. Files are read under it: proc/driver/nvidia/version, dev/, etc/os-release,
  /// the library folders of every driver layout, conda prefixes, dpkg's status database. Paths
  /// envlock reports are host paths (without the root).
  std::filesystem::path root = "/";
  /// True: `root` is this running machine (links are followed as the kernel does; capture takes
  /// the kernel release, CPU level and page size from the process rather than from files).
  bool live = false;
  /// Home folders (host paths, e.g. "/home/ana") whose `.conda/environments.txt` and
  /// `.conda/envs/` capture searches when no prefix is given.
  std::vector<std::filesystem::path> home_dirs;

  // -- environment and commands ----------------------------------------------------------------
  /// The value of an environment variable, or nullopt when unset. Empty: nothing is set.
  std::function<std::optional<std::string>(const std::string&)> getenv;
  /// Runs a command (argv[0] looked up in PATH) and returns its standard output, or an error when
  /// it cannot be started, exits non-zero or runs past its time limit. Empty: no commands are run
  /// (a host tree that is not this machine). Capture uses it for `nvidia-smi -q -x` and `rpm -qa`.
  std::function<Result<std::string>(const std::vector<std::string>& argv)> run;

  // -- the NVIDIA driver (detect_driver, envlock/probe.hpp) ------------------------------------
  std::string libcuda;     ///< a file to load instead of searching the layouts (empty: search)
  std::string libnvml;     ///< the same for NVML
  std::string nvidia_smi;  ///< a program to run instead of searching PATH and the layouts
  int timeout_ms = 10000;  ///< per vendor query

  // -- facts of the running process (detect_virtual_packages; capture of a live host) ---------
  /// Kernel release string (uname -r), e.g. "6.1.0-18-amd64".
  std::function<std::string()> kernel_release;
  /// glibc version, e.g. "2.36"; empty when not glibc.
  std::function<std::string()> glibc_version;
  /// The __archspec build: x86_64_v1..v4 from CPUID, or the machine name.
  std::function<std::string()> microarchitecture;
  /// Max CUDA version the driver supports ("12.4"), or nullopt without a usable driver.
  std::function<std::optional<std::string>()> cuda_driver_version;
  /// Why no GPU is usable by this process although the driver is there (e.g. "driver present, no
  /// device visible to this process: CUDA_VISIBLE_DEVICES is empty"); nullopt otherwise. Asked
  /// after cuda_driver_version (the system host answers both from one detection).
  std::function<std::optional<std::string>()> cuda_visibility;

  /// This machine: root `/`, live; the process environment; `$HOME` as the home folder; commands
  /// run with a 20-second limit each (stdin /dev/null, stderr discarded, 64 MiB of output);
  /// ENVLOCK_LIBCUDA, ENVLOCK_LIBNVML and ENVLOCK_NVIDIA_SMI when set (fake drivers in tests),
  /// else every layout is searched — with ENVLOCK_LIBCUDA set and no ENVLOCK_NVIDIA_SMI,
  /// nvidia-smi is not run, so a fake driver stays the only driver; uname, gnu_get_libc_version,
  /// CPUID (detect_microarchitecture) and one detect_driver() of this machine (5-second vendor
  /// timeout, run when cuda_driver_version or cuda_visibility is first asked) for the facts of
  /// the running process.
  static Host system();
  /// A host tree in `root`: not live, no environment, no commands, no process facts; home
  /// folders are `<root>/root` and every `<root>/home/*`.
  static Host tree(const std::filesystem::path& root);

  /// getenv(name), or nullopt when `getenv` is empty.
  [[nodiscard]] std::optional<std::string> env(const std::string& name) const;

  /// The local path of host path `host_path` (absolute, as seen on the host). Live: the path
  /// itself when it exists. A tree: symbolic links are followed inside the tree, absolute link
  /// targets read relative to `root`, so a tree never escapes into the machine that reads it.
  /// Returns nullopt when a component is missing or the links loop.
  [[nodiscard]] std::optional<std::filesystem::path> resolve(const std::filesystem::path& host_path) const;
};

/// What read_host_file_as() found at a path.
struct HostFileRead {
  std::optional<std::string> text;  ///< the bytes read; nullopt when absent or refused
  std::string refused;              ///< why it was not read ("is a FIFO, not a regular file, so it is not read");
                                    ///< empty when read or absent (ENOENT, ENOTDIR)
};

/// How read_host_file_as() reads.
struct HostFileOptions {
  std::size_t max_bytes = 64 * 1024;  ///< the most it reads (counted while reading: /proc files report size 0)
  bool refuse_larger = false;         ///< a larger file: refused ("is larger than N MiB"); false: its first max_bytes
  bool follow_last_link = true;       ///< false: a link at the path's end is refused (O_NOFOLLOW), for a
                                      ///< path Host::resolve() returned inside a host tree
};

/// The one reader of host files (/proc and /sys files, /etc/os-release, the dpkg database, a
/// driver's version file, a prefix's dist-info files in a capture): opens with O_NONBLOCK (a FIFO
/// never blocks the open), fstat()s the open descriptor and reads only a regular file, at most
/// `options.max_bytes`. Absent (ENOENT, ENOTDIR): text and refused both empty; anything else not
/// read (a FIFO, a device, a folder, a link when not followed, an open or read error, too large
/// when refused): `refused` says why. probe's read_host_file() and snapshot's read_regular_file()
/// are this reader.
HostFileRead read_host_file_as(const std::filesystem::path& path, const HostFileOptions& options);

/// The first `max_bytes` of `path` when it is a regular file (procfs files are); nullopt when it
/// is absent, cannot be opened or read, or is anything else — a FIFO, a device, a folder — so a
/// planted FIFO cannot block the probe: read_host_file_as() with its default options.
std::optional<std::string> read_host_file(const std::filesystem::path& path, std::size_t max_bytes = 64 * 1024);

}  // namespace envlock
