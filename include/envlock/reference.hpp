#pragma once
// envlock/reference.hpp — reference runs: does the environment still give the recorded metric?
//
// A manifest's `reference: {command, metric, tolerance}` is carried into the lockfile
// (LockedEnvironment::reference). `envlock reference record` runs the command inside an
// environment and stores the value, with the probe facts of the recording host, in the lockfile;
// `envlock verify --reference` runs it again and compares:
//
//   * the command runs with /bin/sh -c in the lockfile's folder, inside the environment: PATH
//     starts with <prefix>/bin, CONDA_PREFIX, CONDA_DEFAULT_ENV, CONDA_SHLVL=1 and
//     PYTHONNOUSERSITE=1 are set, and the prefix's etc/conda/activate.d/*.sh scripts are sourced
//     first (sorted, as conda activate does). The caller's environment is removed except HOME,
//     LANG, LC_ALL, TERM, TMPDIR, TZ, the GPU selection (CUDA_VISIBLE_DEVICES,
//     NVIDIA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER) and the variables listed with --keep-env;
//   * the metric is `json:<key path>` (a dotted path into the JSON object the command prints: the
//     whole output, or else its last line that is a JSON object holding the key) or
//     `regex:<ECMAScript regex>` (the last match; its first group, else the whole match), read
//     from stdout, then stderr; a bare key path means `json:`;
//   * the value passes when |value - recorded| <= tolerance (absolute).
// A command that is missing, crashes, exits non-zero, outlives --timeout or prints no metric is a
// verdict with the reason and the tail of its output, never a hang: the command runs in its own
// process group, which is killed at the deadline.

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "envlock/lockfile.hpp"
#include "envlock/probe.hpp"
#include "envlock/process.hpp"  // InterruptScope
#include "envlock/result.hpp"

namespace envlock {

enum class ReferenceStatus {
  Pass,             ///< the value is within tolerance of the recorded one
  Fail,             ///< the value is outside the tolerance
  Measured,         ///< a value was read; nothing recorded to compare with (recording)
  NoRecordedValue,  ///< verification asked, but the lockfile holds no recorded value
  NoReference,      ///< the lockfile environment has no reference command
  CommandMissing,   ///< the shell could not find the command (exit 127) or it is not executable (126)
  CommandFailed,    ///< the command exited with a non-zero status
  Crashed,          ///< the command died from a signal
  TimedOut,         ///< the command outlived the timeout and was killed
  NoMetric,         ///< the command succeeded but its output holds no such metric
  BadMetric,        ///< the metric spec itself is invalid (bad regex, empty key)
  Interrupted,      ///< SIGINT or SIGTERM arrived (InterruptScope): the command's group was killed
};

/// "pass", "fail", "measured", "no-recorded-value", "no-reference", "command-missing",
/// "command-failed", "crashed", "timed-out", "no-metric", "bad-metric", "interrupted".
const char* to_string(ReferenceStatus status);

struct ReferenceRunOptions {
  std::filesystem::path prefix;             ///< the environment the command runs in
  std::filesystem::path working_directory;  ///< where it runs (the lockfile's folder)
  std::string environment_name;             ///< CONDA_DEFAULT_ENV
  int timeout_s = 600;                      ///< seconds before the process group is killed
  std::vector<std::string> keep_env;        ///< caller variables passed through, by name
  /// The caller's environment (nullopt: unset). Empty function: the process environment.
  std::function<std::optional<std::string>(const std::string&)> getenv;
};

struct ReferenceOutcome {
  ReferenceStatus status = ReferenceStatus::NoReference;
  std::string command;
  std::string metric;
  std::optional<double> value;     ///< what this run measured
  std::optional<double> recorded;  ///< what the lockfile holds
  double tolerance = 0.0;
  int exit_status = -1;            ///< the command's exit status, when it exited
  int signal = 0;                  ///< the signal that ended it, when it crashed
  std::string output_tail;         ///< the last 4 KiB of stdout + stderr
  std::string message;             ///< one line: what happened
  std::string hint;                ///< what to do, when not Pass/Measured
  [[nodiscard]] bool ok() const { return status == ReferenceStatus::Pass || status == ReferenceStatus::Measured; }
};

/// The environment the command runs with, as sorted "NAME=value" strings (see the file comment).
std::vector<std::string> reference_environment(const ReferenceRunOptions& options);

/// Bytes of the output a report shows (its end), per stream and combined.
inline constexpr std::size_t kReferenceTailBytes = 4096;
/// The most of one stream held to read it as one JSON document (and of one JSON line).
inline constexpr std::size_t kReferenceWholeBytes = 16u << 20;
/// The bytes of each line a `regex:` metric is matched against (std::regex recurses per matched
/// character: an unbounded line would overflow the stack).
inline constexpr std::size_t kReferenceRegexLineBytes = 4096;

/// Reads `metric` (`json:a.b`, `a.b`, or `regex:...`) from `output`: `regex:` is matched line by
/// line (the first kReferenceRegexLineBytes of each; the last match of the last matching line
/// wins); `json:` reads the whole output as one JSON document when it is at most
/// kReferenceWholeBytes, else the last line that is a JSON object holding the key. run_reference
/// reads each stream the same way as it arrives, so nothing the command prints is dropped. Errors: ErrorKind::Parse
/// with a message saying what was looked for (no such key, key not a number, no regex match,
/// invalid regex).
Result<double> extract_metric(const std::string& metric, const std::string& output);

/// Runs `reference.command` in the environment and compares with `reference.recorded_value`
/// when there is one (Pass/Fail), else reports Measured.
ReferenceOutcome run_reference(const ReferenceRun& reference, const ReferenceRunOptions& options);

/// `text` (a command's output) as the lines a terminal may show: split at newlines, each through
/// printable() (control bytes, \r and escape sequences written as `\xNN`); a last newline ends
/// the last line.
std::vector<std::string> output_lines(std::string_view text);

/// Both hosts' probe facts side by side ("key: recorded | now"), one line per key, sorted; lines
/// that differ are marked with '*'.
std::string side_by_side(const std::map<std::string, std::string>& recorded,
                         const std::map<std::string, std::string>& now);

// ---------------------------------------------------------------------------------------------
// Verification: probe + reference run, on an existing prefix or a throwaway one

/// Creates the environment of a lockfile at `prefix` (the installer). `verify --clean` passes
/// `envlock install -l LOCKFILE -e ENV -p PREFIX`; tests pass a function that builds a prefix.
using CreateEnvironment = std::function<Status(const std::filesystem::path& prefix)>;

struct VerifyRequest {
  std::filesystem::path lockfile;
  std::string environment;                  ///< empty: the lockfile's only (or `default`) environment
  std::optional<std::filesystem::path> prefix;  ///< an existing prefix (verify --reference -p)
  bool clean = false;                       ///< build a throwaway prefix with `create` first
  bool keep = false;                        ///< keep the throwaway prefix (its path is reported)
  bool run_probe = true;
  bool run_reference = true;
  CreateEnvironment create;                 ///< required when `clean`
  Host probe_host;                     ///< where the probe looks
  ReferenceRunOptions reference_options;    ///< prefix and working directory are filled in
};

struct ReferenceVerifyReport {
  std::string environment;
  std::filesystem::path prefix;     ///< where it ran (kept or removed)
  bool prefix_kept = false;
  std::optional<ProbeReport> probe;
  std::optional<ReferenceOutcome> reference;
  std::map<std::string, std::string> recorded_host;  ///< from the lockfile
  std::map<std::string, std::string> current_host;   ///< this host's probe facts
  std::string create_error;         ///< why the throwaway environment could not be made
  /// 0 pass; the probe's code (1 or 3) when it failed; 1 for a failed reference run or creation.
  [[nodiscard]] int exit_code() const;
  [[nodiscard]] nlohmann::json to_json() const;
  [[nodiscard]] std::string to_text(bool color) const;
};

/// Picks the environment of `lockfile` (read from `source`, named in errors): `name` when given,
/// else the only one, else `default`. The one rule of every command that takes `-e` (install,
/// create, list, export, probe, verify --reference, reference record; docs/cli.md). Errors: an
/// unknown `name` is ErrorKind::Incompatible (exit 1: what the lockfile holds decides, as conda's
/// EnvironmentLocationNotFound), `SOURCE: has no environment 'NAME'`, detail `environments in it:
/// ...`, hint `pass one of them with -e`; several environments, none called `default`, and no
/// `name` is ErrorKind::Usage (exit 2), `SOURCE: has several environments and none is called
/// 'default'`, hint `choose one with -e`.
Result<std::string> pick_environment(const Lockfile& lockfile, const std::string& name, const std::string& source);

/// The probe's package facts for a lockfile environment on this platform (and/or an installed
/// prefix, whose conda-meta records then replace the lockfile's), with a description of the
/// source for the report.
Result<std::pair<PackageCudaFacts, std::string>> package_facts(const Lockfile* lockfile, const std::string& environment,
                                                               const std::optional<std::filesystem::path>& prefix,
                                                               const std::string& lockfile_name);

/// Runs the verification described by `request`. Errors (ErrorKind::Io/Parse/Usage) for an
/// unreadable lockfile or unknown environment; everything else is in the report.
Result<ReferenceVerifyReport> verify_environment(const VerifyRequest& request);

/// Runs the reference command in `prefix` and, when it measured a value, stores it with this
/// host's probe facts in the lockfile (written atomically). Returns the outcome; the lockfile is
/// left untouched unless the outcome is Measured.
Result<ReferenceOutcome> record_reference(const std::filesystem::path& lockfile, const std::string& environment,
                                          const std::filesystem::path& prefix, const Host& probe_host,
                                          ReferenceRunOptions options);

}  // namespace envlock
