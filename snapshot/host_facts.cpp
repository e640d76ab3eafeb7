// Host facts read through a Host: os-release, kernel, glibc and libstdc++ versions (ELF
// version definitions), CPU architecture and x86-64 level, page size, NVIDIA driver, system packages.
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <set>
#include <sstream>

#include "text_util.hpp"
#include "envlock/snapshot.hpp"
#include "envlock/text.hpp"

namespace envlock {

namespace fs = std::filesystem;

namespace {

// Reads a host file through the seam (read_regular_file: regular files only, at most
// kMaxReadFile bytes); nullopt when missing or refused. A refused file is a fact that could not
// be read: it is added to `problems` as "<host path>: <why>: <what is lost>".
std::optional<std::string> host_file(const Host& seam, const fs::path& host_path, std::vector<CaptureProblem>& problems,
                                     std::string_view lost, fs::path* local_out = nullptr) {
  auto local = seam.resolve(host_path);
  if (!local) return std::nullopt;
  if (local_out != nullptr) *local_out = *local;
  // A tree's path is resolved link by link already: a link at its end now is refused.
  auto r = snapshot_detail::read_regular_file(*local, seam.live ? snapshot_detail::ReadAs::HostFile : snapshot_detail::ReadAs::ResolvedFile);
  if (!r.refused.empty()) problems.push_back({host_path.string(), r.refused + ": " + std::string(lost)});
  return std::move(r.text);
}

// True when `host_path` is there as a symbolic link that leads nowhere (or, in a host tree, out
// of it): a fact that could not be read, unlike a file that is simply absent.
bool dangling_link(const Host& seam, const fs::path& host_path) {
  if (seam.resolve(host_path)) return false;
  const auto dir = seam.resolve(host_path.parent_path());
  std::error_code ec;
  return dir && fs::is_symlink(fs::symlink_status(*dir / host_path.filename(), ec));
}

// Finds a shared library by soname in the usual library folders (multiarch first).
std::optional<std::pair<fs::path, fs::path>> find_library(const Host& seam, const std::string& soname) {
  std::vector<fs::path> dirs;
  for (const char* base : {"/lib", "/usr/lib"}) {
    auto local = seam.resolve(base);
    if (!local) continue;
    std::vector<fs::path> multi;
    std::error_code ec;
    for (fs::directory_iterator it(*local, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string n = it->path().filename().string();
      if (n.find("-linux-gnu") != std::string::npos) multi.push_back(fs::path(base) / n);
    }
    std::sort(multi.begin(), multi.end());
    dirs.insert(dirs.end(), multi.begin(), multi.end());
  }
  for (const char* d : {"/lib64", "/usr/lib64", "/lib", "/usr/lib"}) dirs.emplace_back(d);
  for (const auto& d : dirs) {
    const fs::path host = d / soname;
    if (auto local = seam.resolve(host); local && fs::is_regular_file(*local)) return std::make_pair(host, *local);
  }
  return std::nullopt;
}

const char* source_kind_name(PipSource s) {
  switch (s) {
    case PipSource::Index: return "index";
    case PipSource::Editable: return "editable";
    case PipSource::Vcs: return "vcs";
    case PipSource::Archive: return "archive";
    case PipSource::Directory: return "directory";
  }
  return "index";
}

// x86-64 psABI level from /proc/cpuinfo flag names (the same feature sets as detect_microarchitecture).
std::string level_from_cpuinfo_flags(const std::set<std::string>& f) {
  auto all = [&](std::initializer_list<const char*> names) {
    return std::all_of(names.begin(), names.end(), [&](const char* n) { return f.count(n) > 0; });
  };
  const bool v2 = all({"cx16", "lahf_lm", "popcnt", "pni", "sse4_1", "sse4_2", "ssse3"});
  const bool v3 = v2 && all({"avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave"});
  const bool v4 = v3 && all({"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"});
  return v4 ? "x86_64_v4" : v3 ? "x86_64_v3" : v2 ? "x86_64_v2" : "x86_64_v1";
}

std::string platform_for(const std::string& arch) {
  if (arch == "x86_64") return "linux-64";
  if (arch == "i686" || arch == "i386") return "linux-32";
  if (arch == "aarch64") return "linux-aarch64";
  if (arch == "ppc64le") return "linux-ppc64le";
  if (arch == "s390x") return "linux-s390x";
  if (arch == "armv7l") return "linux-armv7l";
  if (arch == "riscv64") return "linux-riscv64";
  return "";
}

std::optional<std::string> command_output(const Host& seam, const CaptureOptions& options, const std::string& tool,
                                          const std::vector<std::string>& argv, std::vector<CaptureProblem>& problems,
                                          bool missing_is_problem) {
  if (auto it = options.command_outputs.find(tool); it != options.command_outputs.end()) {
    auto r = snapshot_detail::read_regular_file(it->second);
    if (!r.text) {
      problems.push_back({it->second.string(), "cannot read the saved " + tool + " output" + (r.refused.empty() ? ": no such file" : ": it " + r.refused)});
      return std::nullopt;
    }
    return std::move(r.text);
  }
  if (!seam.run) return std::nullopt;
  auto out = seam.run(argv);
  if (!out) {
    if (missing_is_problem) problems.push_back({out.error().where, out.error().message});
    return std::nullopt;
  }
  return *out;
}

}  // namespace

HostFacts capture_host_facts(const Host& seam, const CaptureOptions& options, std::vector<CaptureProblem>& problems) {
  HostFacts h;

  // os-release: /etc/os-release, else /usr/lib/os-release (os-release(5)).
  {
    // The fallback is read only when /etc/os-release is absent, not when it was refused.
    const std::size_t before = problems.size();
    const char* lost = "the operating system is not recorded";
    auto text = host_file(seam, "/etc/os-release", problems, lost);
    if (!text && problems.size() == before) text = host_file(seam, "/usr/lib/os-release", problems, lost);
    if (!text && problems.size() == before) {
      problems.push_back({"/etc/os-release", "missing: the operating system is not recorded"});
    } else if (!text) {
      // refused: host_file listed it
    } else if (auto os = parse_os_release(*text, "/etc/os-release"); !os) {
      problems.push_back({os.error().where, os.error().message});
    } else {
      h.os = *os;
    }
  }

  // Kernel release.
  bool kernel_refused = false;  // listed by host_file already
  if (seam.live) {
    if (seam.kernel_release) h.kernel = seam.kernel_release();
  } else {
    const std::size_t before = problems.size();
    if (auto k = host_file(seam, "/proc/sys/kernel/osrelease", problems, "the kernel release is not recorded")) h.kernel = trim(*k);
    kernel_refused = problems.size() != before;
  }
  if (h.kernel.empty() && !kernel_refused) problems.push_back({"/proc/sys/kernel/osrelease", "missing: the kernel release is not recorded"});

  // glibc and the CPU architecture from libc.so.6.
  if (auto libc = find_library(seam, "libc.so.6")) {
    if (auto info = read_elf_version_definitions(libc->second); !info) {
      problems.push_back({libc->first.string(), info.error().message});
    } else {
      h.glibc = max_symbol_version(info->versions, "GLIBC_");
      h.cpu_arch = info->machine;
      if (h.glibc.empty()) problems.push_back({libc->first.string(), "defines no GLIBC_ versions: not glibc?"});
    }
  } else {
    problems.push_back({"libc.so.6", "not found in /lib, /usr/lib (multiarch folders), /lib64, /usr/lib64: glibc is not recorded"});
  }
  if (seam.live) {
    struct utsname u {};
    if (uname(&u) == 0) h.cpu_arch = u.machine;
  }

  // The system libstdc++.
  if (auto lib = find_library(seam, "libstdc++.so.6")) {
    if (auto info = read_elf_version_definitions(lib->second); !info) {
      problems.push_back({lib->first.string(), info.error().message});
    } else {
      h.libstdcxx_glibcxx = max_symbol_version(info->versions, "GLIBCXX_");
      h.libstdcxx_cxxabi = max_symbol_version(info->versions, "CXXABI_");
    }
  } else {
    // No system libstdc++ is a fact, not a failure (conda environments ship their own); a link
    // to one that is gone is a failure to read it.
    for (const char* d : {"/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib/powerpc64le-linux-gnu",
                          "/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib"}) {
      const fs::path host = fs::path(d) / "libstdc++.so.6";
      if (dangling_link(seam, host)) {
        problems.push_back({host.string(), "a link that leads nowhere: the libstdc++ versions are not recorded"});
        break;
      }
    }
  }

  // CPU level.
  if (seam.live) {
    if (seam.microarchitecture) h.cpu_level = seam.microarchitecture();
  } else if (h.cpu_arch == "x86_64") {
    const std::size_t before = problems.size();
    if (auto info = host_file(seam, "/proc/cpuinfo", problems, "the x86-64 level is not recorded")) {
      std::istringstream in(*info);
      std::string line;
      while (std::getline(in, line)) {
        if (!line.starts_with("flags")) continue;
        const auto colon = line.find(':');
        std::set<std::string> flags;
        std::istringstream fl(colon == std::string::npos ? "" : line.substr(colon + 1));
        for (std::string f; fl >> f;) flags.insert(f);
        h.cpu_level = level_from_cpuinfo_flags(flags);
        break;
      }
    }
    if (h.cpu_level.empty() && problems.size() == before) problems.push_back({"/proc/cpuinfo", "no CPU flags: the x86-64 level is not recorded"});
  } else {
    h.cpu_level = h.cpu_arch;
  }
  h.platform = platform_for(h.cpu_arch);

  // Page size.
  bool smaps_refused = false;  // listed by host_file already
  if (seam.live) {
    const long ps = sysconf(_SC_PAGESIZE);
    if (ps > 0) h.page_size = static_cast<std::uint64_t>(ps);
  } else {
    const std::size_t before = problems.size();
    if (auto smaps = host_file(seam, "/proc/self/smaps", problems, "the page size is not recorded")) {
      const auto at = smaps->find("KernelPageSize:");
      if (at != std::string::npos) {
        std::istringstream in(smaps->substr(at + 15));
        std::uint64_t kb = 0;
        if (in >> kb) h.page_size = kb * 1024;
      }
    }
    smaps_refused = problems.size() != before;
  }
  if (!h.page_size && !smaps_refused) problems.push_back({"page size", "not readable (no /proc/self/smaps in the host tree)"});

  // NVIDIA: /proc/driver/nvidia/version for the driver, nvidia-smi -q -x for CUDA and GPUs.
  const auto proc_version = host_file(seam, "/proc/driver/nvidia/version", problems, "the NVIDIA driver version is not recorded");
  const auto smi = command_output(seam, options, "nvidia-smi", {"nvidia-smi", "-q", "-x"}, problems, proc_version.has_value());
  // Problems name a saved output (--nvidia-smi-xml FILE) by its path, the command otherwise.
  const auto saved_smi = options.command_outputs.find("nvidia-smi");
  const std::string smi_name = saved_smi != options.command_outputs.end() ? saved_smi->second.string() : "nvidia-smi -q -x";
  // Live, the CUDA version is also what `envlock install`'s __cuda reads (the seam's
  // cuda_driver_version; Host::system(): detect_driver's chain, ENVLOCK_LIBCUDA honoured): WSL2
  // and a restricted /proc have no /proc/driver/nvidia/version, and nvidia-smi may be absent,
  // while libcuda works.
  std::optional<std::string> live_cuda;
  auto install_cuda = [&seam]() -> std::optional<std::string> {
    return seam.cuda_driver_version ? seam.cuda_driver_version() : std::nullopt;
  };
  if (!proc_version && !smi && seam.live) live_cuda = install_cuda();
  if (proc_version || smi || live_cuda) {
    NvidiaFacts nv;
    if (smi) {
      if (auto parsed = parse_nvidia_smi_xml(*smi, smi_name, options.include_ids); !parsed) {
        problems.push_back({parsed.error().where, parsed.error().message});
      } else {
        nv = *parsed;
      }
    }
    if (proc_version) {
      if (auto v = parse_nvidia_proc_version(*proc_version, "/proc/driver/nvidia/version"); !v) {
        problems.push_back({v.error().where, v.error().message});
      } else {
        // The loaded kernel module is the authority; nvidia-smi's own word is kept beside it when
        // it disagrees (user space upgraded, module not reloaded: CUDA fails to initialise).
        if (!nv.driver_version.empty() && nv.driver_version != *v) {
          nv.smi_driver_version = nv.driver_version;
          problems.push_back({"/proc/driver/nvidia/version", "the kernel module's driver version " + *v + " disagrees with " + smi_name +
                                                                 "'s " + nv.smi_driver_version +
                                                                 " (both recorded: a driver upgraded without reloading the module?)"});
        }
        nv.driver_version = *v;
      }
    }
    // libcuda.so.1 leads to libcuda.so.<driver version>: user space of another driver than the
    // module's is a disagreement too.
    if (const auto lib = find_library(seam, "libcuda.so.1"); lib && !nv.driver_version.empty()) {
      std::error_code ec;
      const fs::path real = seam.live ? fs::canonical(lib->second, ec) : lib->second;  // a tree's path is resolved already
      const std::string file = real.filename().string();
      const std::string libv = file.starts_with("libcuda.so.") ? file.substr(11) : std::string();
      if (!libv.empty() && libv != "1" && std::isdigit(static_cast<unsigned char>(libv[0])) && libv != nv.driver_version) {
        nv.libcuda_version = libv;
        problems.push_back({lib->first.string(), "libcuda " + libv + " disagrees with the driver version " + nv.driver_version + " (" +
                                                     (proc_version ? "/proc/driver/nvidia/version" : smi_name) + "; both recorded)"});
      }
    }
    if (nv.cuda_version.empty() && seam.live) {
      if (!live_cuda) live_cuda = install_cuda();
      if (live_cuda) nv.cuda_version = *live_cuda;
    }
    // GPUs without the driver's versions would deploy as "no driver": say what is missing.
    const std::string from = proc_version ? "/proc/driver/nvidia/version" : smi_name;
    if (nv.driver_version.empty() && (proc_version || !nv.gpus.empty())) {
      problems.push_back({from, "no driver version found: the NVIDIA driver version is not recorded"});
    }
    if (nv.cuda_version.empty() && !nv.gpus.empty()) {
      problems.push_back({smi_name, "no <cuda_version>: the CUDA version the driver supports is not recorded"});
    }
    h.nvidia = nv;
  }

  // The pip packages of system Pythons (a host without conda has its Python stack here).
  for (const char* base : {"/usr/lib", "/usr/local/lib", "/usr/lib64"}) {
    const auto local = seam.resolve(base);
    if (!local) continue;
    std::vector<std::string> sites;
    std::error_code ec;
    for (fs::directory_iterator it(*local, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string n = it->path().filename().string();
      if (!n.starts_with("python3")) continue;
      for (const char* leaf : {"site-packages", "dist-packages"})
        if (fs::is_directory(it->path() / leaf)) sites.push_back(std::string(base) + "/" + n + "/" + leaf);
    }
    std::sort(sites.begin(), sites.end());
    for (const auto& site : sites) {
      SystemPythonSite sp;
      sp.site = site;
      const auto dir = seam.resolve(site);
      if (!dir) continue;
      for (const auto& info : dist_info_dirs(*dir)) {
        const std::string host_path = site + "/" + info.filename().string();
        auto d = read_dist_info(info, host_path, DistInfoParts::WithoutRecord);
        if (!d) {
          problems.push_back({d.error().where, d.error().message});
          continue;
        }
        sp.packages.push_back({d->name, d->version, d->installer, source_kind_name(d->source)});
      }
      for (const auto& d : read_egg_links(*dir, site, [&](const fs::path& p) { return seam.resolve(p); })) sp.packages.push_back({d.name, d.version, d.installer, "editable"});
      if (sp.packages.empty()) continue;
      std::sort(sp.packages.begin(), sp.packages.end(), [](const auto& a, const auto& b) {
        return std::pair(pep503_normalize(a.name), a.version) < std::pair(pep503_normalize(b.name), b.version);
      });
      h.system_python.push_back(std::move(sp));
    }
  }
  std::sort(h.system_python.begin(), h.system_python.end(), [](const auto& a, const auto& b) { return a.site < b.site; });

  // System packages: a saved `rpm -qa` output the user named, else dpkg's status database, else
  // rpm. A named file is never left unread.
  const auto saved_rpm = options.command_outputs.find("rpm");
  if (saved_rpm == options.command_outputs.end() && dangling_link(seam, "/var/lib/dpkg/status")) {
    problems.push_back({"/var/lib/dpkg/status", "a link that leads nowhere: the system packages are not recorded"});
  }
  std::optional<std::string> dpkg_status;
  bool dpkg_refused = false;  // listed by host_file: rpm is not tried in its place
  if (saved_rpm == options.command_outputs.end()) {
    const std::size_t before = problems.size();
    dpkg_status = host_file(seam, "/var/lib/dpkg/status", problems, "the system packages are not recorded");
    dpkg_refused = problems.size() != before;
  }
  if (dpkg_status) {
    h.system_package_manager = "dpkg";
    // A faulty stanza costs that one package (listed as a problem), never the whole list.
    if (auto pkgs = parse_dpkg_status(*dpkg_status, "/var/lib/dpkg/status", &problems); !pkgs) {
      problems.push_back({pkgs.error().where, pkgs.error().message});
    } else {
      h.system_packages = std::move(*pkgs);
    }
  } else if (dpkg_refused) {
    h.system_package_manager = "dpkg";
  } else if (saved_rpm != options.command_outputs.end() || seam.resolve("/var/lib/rpm")) {
    h.system_package_manager = "rpm";
    const auto out = command_output(seam, options, "rpm",
                                    {"rpm", "-qa", "--queryformat", "%{NAME}\\t%{EPOCHNUM}:%{VERSION}-%{RELEASE}\\t%{ARCH}\\n"},
                                    problems, true);
    if (!out) {
      if (!seam.run && saved_rpm == options.command_outputs.end()) {
        problems.push_back({"/var/lib/rpm", "an rpm database is present but commands are not run on a host tree; pass the saved `rpm -qa` output"});
      }
    } else {
      // A faulty line costs that one package (listed as a problem, naming the saved file's line).
      const std::string source = saved_rpm != options.command_outputs.end() ? saved_rpm->second.string() : "rpm -qa";
      if (auto pkgs = parse_rpm_query(*out, source, &problems); pkgs) h.system_packages = std::move(*pkgs);
    }
  }
  return h;
}

}  // namespace envlock
