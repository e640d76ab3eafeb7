#pragma once
// envlock/snapshot.hpp — freeze a drifted host into a snapshot, compare snapshots, check whether a
// target can run one, turn one into a lockfile, and redeploy it.
//
// Capture reads the host only through a `HostSeam`: a root folder (`/` for this machine, any
// folder holding a host tree for tests or a mounted disk) and one command runner. Nothing is read
// from the process environment beyond `$HOME` (to find `~/.conda/environments.txt`), and nothing
// secret is recorded: no environment variables, no tokens (URLs pass through redact_url), no user
// or host names beyond the prefix paths themselves, GPU UUIDs only on request.
//
// The snapshot file (YAML, format version 1, documented in docs/snapshot.md) is an envlock.lock
// document (the `version` and `environments` keys, written by Lockfile::to_yaml, so `envlock diff`
// and `envlock list` read its conda part) followed by a `snapshot:` section holding the host facts,
// the prefixes, drift, pip distributions and capture problems. Output is deterministic: keys and
// lists sorted, no clock unless a timestamp is asked for.
//
// Standards followed: conda's PrefixRecord (conda-meta/*.json, paths.json v1), PEP 376/627
// (*.dist-info, RECORD, INSTALLER), PEP 610 (direct_url.json), PEP 600 (manylinux wheel tags),
// deb822 (/var/lib/dpkg/status), os-release(5), ELF gABI + the GNU symbol versioning extension
// (.gnu.version_d), NVIDIA's nvidia-smi -q -x log format.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "envlock/diff.hpp"
#include "envlock/lockfile.hpp"
#include "envlock/package_record.hpp"
#include "envlock/pip.hpp"
#include "envlock/result.hpp"

namespace envlock {

// ---------------------------------------------------------------------------------------------
// The seam to the outside world
// ---------------------------------------------------------------------------------------------

/// Where capture reads the host. Every fact comes from a file under `root` or from `run`; the
/// live-only probes (CPUID, sysconf, uname) are used only when `live` is true.
struct HostSeam {
  std::filesystem::path root = "/";  ///< the host's `/`; paths in the snapshot are host paths
  bool live = false;                  ///< true: `root` is this running machine
  /// Home folders (host paths, e.g. "/home/ana") whose `.conda/environments.txt` and
  /// `.conda/envs/` are searched when no prefix is given.
  std::vector<std::filesystem::path> home_dirs;
  /// Runs a command (argv[0] looked up in PATH) and returns its standard output, or an error when
  /// it cannot be started, exits non-zero or runs past its time limit. Empty: no commands are run
  /// (a host tree that is not this machine). Used for `nvidia-smi -q -x` and `rpm -qa`.
  std::function<Result<std::string>(const std::vector<std::string>& argv)> run;

  /// This machine: root `/`, live probes on, `$HOME` as the home folder, commands run with a
  /// 20-second limit each.
  static HostSeam system();
  /// A host tree in `root`: no live probes, no commands; home folders are `<root>/root` and every
  /// `<root>/home/*`.
  static HostSeam tree(const std::filesystem::path& root);

  /// The local path of host path `host_path` (absolute, as seen on the host), following symbolic
  /// links inside the tree: absolute link targets are read relative to `root`, so a tree never
  /// escapes into the machine that reads it. Returns nullopt when a component is missing or the
  /// links loop.
  [[nodiscard]] std::optional<std::filesystem::path> resolve(const std::filesystem::path& host_path) const;
};

// ---------------------------------------------------------------------------------------------
// Host facts
// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------
// Prefixes: conda records, pip distributions, drift
// ---------------------------------------------------------------------------------------------

// PipDistribution, RecordEntry, PipSource and read_dist_info() — the pip side of a prefix — are
// declared in envlock/pip.hpp (module envlock_pip), shared with readers' read_prefix.

/// The fast reader capture uses for conda-meta/*.json (simdjson; its types stay in snapshot/).
/// read() gives exactly what `PrefixRecord::from_json(nlohmann::json::parse(text))` gives for a
/// record it accepts, the last value counting for a repeated key; it returns nullopt whenever it
/// is not sure — text simdjson refuses, a missing or mistyped key, an unknown path type — and the
/// caller then reads the record with nlohmann and PrefixRecord::from_json for the exact error.
/// One reader reuses its parse buffers: keep one per thread.
class PrefixRecordReader {
 public:
  PrefixRecordReader();
  ~PrefixRecordReader();
  PrefixRecordReader(PrefixRecordReader&&) noexcept;
  PrefixRecordReader& operator=(PrefixRecordReader&&) noexcept;
  PrefixRecordReader(const PrefixRecordReader&) = delete;
  PrefixRecordReader& operator=(const PrefixRecordReader&) = delete;

  /// Bytes a buffer should hold past the text (`capacity` >= size + padding()) so it is parsed
  /// in place rather than copied.
  static std::size_t padding();
  /// Reads the record in data[0, size); `capacity` is how many bytes from `data` may be read.
  std::optional<PrefixRecord> read(const char* data, std::size_t size, std::size_t capacity);
  /// Same, for text without padding (copied).
  std::optional<PrefixRecord> read(std::string_view text);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// A file whose content no longer matches what its owner installed.
struct ModifiedFile {
  std::string path;      ///< prefix-relative
  std::string owner;     ///< conda package name, or "pip:<name>"
  std::string expected_sha256;
  std::string actual_sha256;  ///< empty when only the size was compared
  std::optional<std::uint64_t> expected_size;
  std::optional<std::uint64_t> actual_size;
  friend bool operator==(const ModifiedFile&, const ModifiedFile&) = default;
};

/// Drift of one prefix against its own records.
struct Drift {
  std::vector<ModifiedFile> modified;  ///< sorted by path
  std::vector<std::string> unowned;    ///< files no conda record or pip RECORD lists, sorted
  /// package (conda name, or "pip:<name>") -> its missing files, sorted
  std::map<std::string, std::vector<std::string>> missing;
  bool hashed = false;                 ///< false: sizes only (CaptureOptions::hash_files off)
  [[nodiscard]] bool empty() const { return modified.empty() && unowned.empty() && missing.empty(); }
  friend bool operator==(const Drift&, const Drift&) = default;
};

/// One conda package of a captured prefix.
struct CapturedPackage {
  RepoDataRecord record;            ///< url/channel credential-free
  std::vector<std::string> files;   ///< prefix-relative paths it installed, sorted
  std::string shadowed_by;          ///< "pip:<name>" when a pip install replaced it
  /// Set in a bundle's snapshot when the package archive was gone and the bundle holds one
  /// re-packed from the installed files: that archive's sha256 (lower-case hex). Empty otherwise.
  std::string repacked_sha256;
  friend bool operator==(const CapturedPackage&, const CapturedPackage&) = default;
};

/// One captured conda environment.
struct CapturedEnvironment {
  std::string name;                       ///< "base" for a conda installation, else the folder name
  std::string prefix;                     ///< host path
  std::string platform;                   ///< subdir of its packages (noarch ignored); host's when none
  std::vector<CapturedPackage> packages;  ///< sorted by name
  std::vector<PipDistribution> pip;       ///< installed by something other than conda, sorted
  Drift drift;
  friend bool operator==(const CapturedEnvironment&, const CapturedEnvironment&) = default;
};

/// A whole snapshot.
struct Snapshot {
  static constexpr int kFormatVersion = kSnapshotFormatVersion;  // envlock/lockfile.hpp
  int format_version = kFormatVersion;
  std::string timestamp;                     ///< ISO 8601 UTC, only with --timestamp
  HostFacts host;
  std::vector<CapturedEnvironment> environments;  ///< sorted by name
  std::vector<CaptureProblem> problems;           ///< empty: complete capture
  [[nodiscard]] bool complete() const { return problems.empty(); }

  /// The deterministic YAML text (see the file comment).
  [[nodiscard]] std::string to_yaml() const;
  /// Parses snapshot text; `source` names the file in errors ("file:line:col: ..."). A newer
  /// format version is refused naming both versions.
  static Result<Snapshot> parse(const std::string& text, const std::string& source);
  static Result<Snapshot> read(const std::filesystem::path& path);
  /// Writes atomically as write_file_atomic() (envlock/atomic_file.hpp): temporary file beside
  /// `path`, fsync, rename; a link is followed, a folder or device refused (ErrorKind::Io).
  [[nodiscard]] Status write(const std::filesystem::path& path) const;

  friend bool operator==(const Snapshot&, const Snapshot&) = default;
};

/// What to capture.
struct CaptureOptions {
  std::vector<std::filesystem::path> prefixes;  ///< host paths; empty: discover (see HostSeam)
  bool include_ids = false;   ///< record GPU UUIDs
  bool hash_files = true;     ///< sha256 every owned file (false: compare sizes only)
  std::string timestamp;      ///< written as is when non-empty
  /// Saved command outputs used instead of running commands ("nvidia-smi", "rpm").
  std::map<std::string, std::filesystem::path> command_outputs;
};

/// Reads the host facts through `seam`; what cannot be read is added to `problems`.
HostFacts capture_host_facts(const HostSeam& seam, const CaptureOptions& options,
                             std::vector<CaptureProblem>& problems);

/// Captures one prefix (host path). A prefix without conda-meta is an error; unreadable records
/// or dist-info folders are added to `problems` and skipped.
Result<CapturedEnvironment> capture_prefix(const HostSeam& seam, const std::filesystem::path& prefix,
                                           const std::string& host_platform, const CaptureOptions& options,
                                           std::vector<CaptureProblem>& problems);

/// The conda prefixes of the host: `~/.conda/environments.txt` entries and `envs/*` below them,
/// plus `~/.conda/envs/*`, keeping those with a conda-meta folder; sorted, unique. An
/// environments.txt that is there but cannot be read (a FIFO, a device, a link out of a host tree,
/// over the size limit, no permission) is added to `problems` (when given) naming it and why, and
/// its entries are not discovered.
std::vector<std::filesystem::path> discover_prefixes(const HostSeam& seam, std::vector<CaptureProblem>* problems = nullptr);

/// Captures host facts and every prefix. Never fails as a whole: what could not be read is listed
/// in Snapshot::problems.
Snapshot capture(const HostSeam& seam, const CaptureOptions& options);

// ---------------------------------------------------------------------------------------------
// Using a snapshot
// ---------------------------------------------------------------------------------------------

/// The conda part of a snapshot as a lockfile: one environment per captured prefix, its records
/// on its platform, pip distributions as PipPackage entries (requirement() text for non-index
/// installs), and unsolved_virtual_packages(platform) of each environment's own platform (never
/// the capture host's facts: a snapshot was not solved, and each record's `__*` depends say what
/// it needs of a target). manifest_hash is empty: no manifest made it.
/// `shadowed` says what becomes of a conda record pip shadowed (its project pip installed over):
///  - LeftOut: the snapshot file's conda part, where pip's install is what `envlock list` and
///    `envlock diff` report (the record is kept in the snapshot's `shadowed:` section);
///  - Kept: `snapshot lock`, where the record is pinned beside pip's entry of that project, since
///    other conda packages may depend on it and the host had it installed under pip's files.
enum class ShadowedRecords { LeftOut, Kept };
Lockfile to_lockfile(const Snapshot& snapshot, ShadowedRecords shadowed);

/// One requirement the target does not meet.
struct FailedRequirement {
  std::string requirement;  ///< "__glibc >=2.34", "platform linux-64", "libstdc++ GLIBCXX_3.4.30"
  std::string needed_by;    ///< package ("pytorch 2.3.1"), "pip:<name> <version>" or "snapshot"
  std::string target_has;   ///< what the target offers ("2.31", "none")
  friend bool operator==(const FailedRequirement&, const FailedRequirement&) = default;
  /// "pytorch 2.3.1 needs __cuda >=12.0; the target has 11.8"
  [[nodiscard]] std::string to_string() const;
};

/// `target` as `envlock install` sees it: its kernel, glibc, CPU level (`cpu_level`, the
/// __archspec build) and CUDA version (`nvidia->cuda_version`) replaced by the virtual packages
/// detect_virtual_packages() makes of them, so CONDA_OVERRIDE_LINUX/GLIBC/ARCHSPEC/CUDA apply as they
/// do for install (a removed package leaves the fact empty; an overridden CUDA without a driver
/// adds an `nvidia` section with no driver version). Errors: ErrorKind::Parse naming the
/// CONDA_OVERRIDE_* variable whose value is not valid.
Result<HostFacts> as_install_sees(const HostFacts& target);

/// Checks whether `target` (taken through as_install_sees()) can run environment `env` of
/// `snapshot`: platform; each record's `__glibc`, `__cuda`, `__linux`, `__archspec` dependencies
/// (and constrains on them); the CPU level a `_x86_64-microarch-level` record (version N: built for
/// x86_64_vN) or a depends on it needs; manylinux tags of pip wheels against glibc; the system
/// libstdc++ when the environment ships none (libstdcxx/libstdcxx-ng absent) against the capture
/// host's. Empty: compatible. An invalid CONDA_OVERRIDE_* value is one failed requirement naming it.
std::vector<FailedRequirement> check_compatibility(const Snapshot& snapshot, const CapturedEnvironment& env,
                                                   const HostFacts& target);

/// One change between two snapshots.
struct SnapshotChange {
  enum class Kind { Added, Removed, Changed };
  Kind kind = Kind::Changed;
  std::string section;   ///< "capture", "host", "system", "system-python", "environment", "conda:<env>", "pip:<env>", "drift:<env>"
  std::string name;      ///< fact, package or environment name
  std::string before;    ///< old value (empty when added)
  std::string after;     ///< new value (empty when removed)
  friend bool operator==(const SnapshotChange&, const SnapshotChange&) = default;
};

/// Differences from `a` to `b`, in this order (by name within a section): the capture ("capture":
/// complete, each problem), host facts ("host": platform, os, os codename, os pretty name, kernel,
/// glibc, libstdc++, CPU, page size, system package manager, driver, nvidia-smi's driver, libcuda,
/// CUDA, GPUs with architecture, compute capability and memory), system packages ("system":
/// "name:arch" -> version, with dpkg's status when not installed), the system Pythons' pip
/// packages ("system-python": "<site> <name>" -> "version [installer] (source)"), environments
/// added/removed ("environment"), then environment by environment its
/// conda packages (version-build, channel, ", shadowed by pip:<name>" for a record pip shadowed),
/// pip distributions and drift (the counts, and each
/// drifted path: "modified <path>" -> "sha256 …, N bytes (owner)", "unowned <path>" -> "",
/// "missing <path>" -> "(owner)"). Environments are paired by
/// name; when each side holds exactly one and their names differ, those two are compared anyway:
/// a change {Changed, "environment", "compared (the only one on each side)", a-name, b-name} says
/// so, and their sections are labelled "<a-name>-><b-name>" (e.g. "conda:src->dep").
///
/// With `package_fields` (what each side's lockfile part holds: cli's recorded_fields of an
/// envlock.lock), each environment pair's packages are also compared as `envlock diff` compares
/// two snapshot files (diff_lockfiles of their lockfile parts, with the records pip shadowed as
/// `snapshot lock` writes them): a change
/// the conda/pip entries above do not show (a re-upload, a hash or URL change, new `__cuda`
/// depends) is added as {Changed, "conda:<label>" or "pip:<label>", name, "version build",
/// "version build [kind+flags: notes]"}, and an entry above whose change is a red flag
/// (is_red_flag) gets the same " [...]" suffix. Without it (nullopt) only the entries above.
std::vector<SnapshotChange> diff_snapshots(const Snapshot& a, const Snapshot& b,
                                           const std::optional<RecordedFields>& package_fields = std::nullopt);

// ---------------------------------------------------------------------------------------------
// Redeploy
// ---------------------------------------------------------------------------------------------

// ---------------------------------------------------------------------------------------------
// Bundles: a snapshot with everything needed to deploy it offline
// ---------------------------------------------------------------------------------------------

/// Knobs for write_bundle().
struct BundleOptions {
  /// Local folders searched first for each package archive, by its file name (the envlock
  /// package cache, conda's pkgs_dirs). After them: `<prefix>/pkgs/` and, for a prefix in
  /// `<root>/envs/`, `<root>/pkgs/` (host paths, read through the seam).
  std::vector<std::filesystem::path> package_dirs;
  int zstd_level = 3;  ///< 1-19
};

/// What write_bundle() put into the bundle.
struct BundleReport {
  std::size_t archives = 0;            ///< package archives found and copied as they were
  std::vector<std::string> repacked;   ///< "<env>: <dist>" re-packed from installed files, sorted
  std::size_t pip_files = 0;           ///< pip-installed files
  Snapshot snapshot;                   ///< the snapshot as the bundle holds it (repacked_sha256 set)
};

/// Writes a bundle (a zstd-compressed tar, written atomically) of `snapshot` as captured through
/// `seam`:
///   snapshot.yaml                        the snapshot, with CapturedPackage::repacked_sha256 set;
///   pkgs/<file name>                     each record's archive (shadowed ones too), found in
///                                        BundleOptions::package_dirs or the prefix's pkgs/ folders
///                                        and checked against the record's sha256 (md5);
///   repacked/<env>/<dist>.conda          when no archive is found: a .conda re-packed from the
///                                        installed files conda-meta lists (pyc files and entry
///                                        point executables made at link time left out, and the
///                                        files a pip RECORD lists or, of a shadowed record, pip's
///                                        uninstall removed), each file checked against its
///                                        conda-meta sha256 first; relocated files carry the
///                                        captured prefix as their placeholder;
///   pip/<env>/<prefix-relative path>     every file a pip distribution's RECORD lists (no .pyc).
/// Errors name the package or file: an installed file that changed or is gone where a package
/// must be re-packed (ErrorKind::Integrity / Io; hint: put the archive into the package cache),
/// a prefix that cannot be read, a bundle that cannot be written (nothing is left at `bundle`).
Result<BundleReport> write_bundle(const HostSeam& seam, const Snapshot& snapshot, const std::filesystem::path& bundle,
                                  const BundleOptions& options);

/// Unpacks `bundle` into the existing empty folder `into` (extract_tar_zst_into: no entry may
/// leave it) and reads its snapshot.yaml. Errors: ErrorKind::Integrity for a corrupt bundle or one
/// without snapshot.yaml; snapshot parse errors (where prefixed with the bundle path).
Result<Snapshot> open_bundle(const std::filesystem::path& bundle, const std::filesystem::path& into);

/// Knobs for deploy_snapshot().
struct DeployOptions {
  std::string environment;              ///< which captured environment; empty: the only one
  std::filesystem::path package_cache;  ///< empty: the default package cache (package_cache.hpp)
  /// Where the pip-installed files are read from: the captured prefix on this machine (a
  /// redeploy on the same host or a host tree with the prefix mounted). Empty: `prefix` of the
  /// snapshot as a path of this machine.
  std::filesystem::path pip_source;
  bool without_pip = false;             ///< install the conda part only; pip installs go to the checklist
  /// A pip install from a local source (editable, local folder, file: archive) whose source is not
  /// on this host is left out and named in the checklist, instead of refusing the deploy.
  bool skip_missing_sources = false;
  /// A bundle unpacked by open_bundle(): every archive comes from it (nothing is downloaded; a
  /// record whose archive it lacks is an error) and pip files from its pip/<env>/ folder.
  std::filesystem::path bundle_dir;
  /// The bundle file as the user named it: errors about a member say "<bundle_name>: pkgs/<file>"
  /// (never the temporary bundle_dir). Empty: bundle_dir's path is used.
  std::string bundle_name;
  /// Deploy an environment capture could not read every conda-meta record of (a problem under
  /// `<prefix>/conda-meta/`) even when its packages depend on packages it does not hold: they
  /// are named in the checklist instead of refused (ErrorKind::Incompatible).
  bool allow_partial = false;
};

/// The dependencies of `env`'s conda packages that no package of `env` satisfies: one line
/// each, "<dist name> needs <MatchSpec>", sorted. Virtual packages (`__glibc`, `__cuda`) are the
/// target's and left out (check_compatibility); a pip distribution of the same project counts
/// (pip replaced the conda one). A depend that does not parse as a MatchSpec is listed too.
std::vector<std::string> unmet_dependencies(const CapturedEnvironment& env);

/// What a deploy did, and what a person still has to do.
struct DeployReport {
  std::string environment;
  std::vector<std::string> installed;     ///< conda dist names linked, sorted
  std::vector<std::string> pip_restored;  ///< "name version", sorted
  /// Never done by envlock: system packages and drivers that differ from the capture host,
  /// drift not reproduced, pip installs left out. One human-readable line each.
  std::vector<std::string> checklist;
};

/// The differences between the capture host and `target` (taken through as_install_sees()) a
/// person must handle by hand: the NVIDIA driver, glibc, a CPU level (x86-64 psABI) lower than the
/// capture host's, OS release, system packages missing or at another version (same package manager
/// only). One line each, in that order.
std::vector<std::string> host_checklist(const HostFacts& captured, const HostFacts& target);

/// Redeploys environment `options.environment` of `snapshot` into `prefix` on this machine:
///  1. check_compatibility() against `target` — any failed requirement refuses the deploy
///     (ErrorKind::Incompatible, each requirement in `detail`);
///  2. every pip-installed file is read from the captured prefix (DeployOptions::pip_source) and
///     checked against its RECORD sha256 into a staging folder beside `prefix`, before anything
///     is installed (ErrorKind::Integrity naming the file when one no longer matches; ErrorKind::Io
///     when the source is gone: use without_pip);
///  3. every recorded conda record, shadowed ones included (the capture host had them installed
///     under pip's files), goes through the package cache (download, sha256 check, extract) and
///     install_packages() — the installer of `envlock install`, which builds the prefix in a
///     staging directory and renames it into place;
///  4. unless without_pip: the files of shadowed records that the capture found missing (pip's
///     uninstall of the conda package removed them; Drift::missing) are removed, then the staged
///     pip files are moved into the new prefix, over the conda files pip had overwritten.
/// DeployReport::checklist counts the modified, unowned and missing files (those of records pip
/// did not shadow) that are not reproduced.
/// `prefix` must not exist or be an empty folder, and pass check_install_prefix() (not a link, not
/// inside another environment at any depth, ...), checked first (ErrorKind::Io otherwise, naming
/// it; an environment the snapshot does not hold is ErrorKind::Usage). On any failure the
/// prefix is left as it was: not created, or removed again when step 4 fails.
Result<DeployReport> deploy_snapshot(const Snapshot& snapshot, const std::filesystem::path& prefix, const HostFacts& target,
                                     const DeployOptions& options);

}  // namespace envlock
