// Reference runs: the command inside the environment, its metric, the tolerance compare.
#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <memory>
#include <regex>
#include <set>
#include <sstream>
#include <string_view>

#include "envlock/process.hpp"
#include "envlock/settings.hpp"
#include "envlock/text.hpp"
#include "envlock/reference.hpp"

namespace envlock {
namespace {

namespace fs = std::filesystem;


const char* const kDefaultPassThrough[] = {"HOME", "LANG", "LC_ALL", "TERM", "TMPDIR", "TZ",
                                           "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER"};

std::string tail(const std::string& s, std::size_t n) { return s.size() <= n ? s : s.substr(s.size() - n); }

std::string format_number(double v) {
  std::ostringstream os;
  os.precision(12);
  os << v;
  return os.str();
}

// Parses a whole string as a finite double ("0.41", "1e-3"); nullopt otherwise.
std::optional<double> to_double(std::string s) {
  s = trim(s);
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || *end != '\0' || errno == ERANGE || !std::isfinite(v)) return std::nullopt;
  return v;
}

// Follows a dotted key path; numeric parts index arrays.
const nlohmann::json* at_path(const nlohmann::json& j, const std::string& path) {
  const nlohmann::json* cur = &j;
  std::stringstream ss(path);
  std::string part;
  while (std::getline(ss, part, '.')) {
    if (cur->is_object()) {
      auto it = cur->find(part);
      if (it == cur->end()) return nullptr;
      cur = &*it;
    } else if (cur->is_array() && !part.empty() && std::all_of(part.begin(), part.end(), ::isdigit)) {
      const std::size_t i = std::stoul(part);
      if (i >= cur->size()) return nullptr;
      cur = &(*cur)[i];
    } else {
      return nullptr;
    }
  }
  return cur;
}

// Reads a metric from one output stream as it arrives, so that none of it is lost however much
// the command prints: `regex:` is matched line by line (the first kReferenceRegexLineBytes of
// each; the last match of the last matching line wins), `json:` takes the whole stream as one
// JSON document when it is at most kReferenceWholeBytes, else the last line that is a JSON object
// holding the key. Keeps the stream's last kReferenceTailBytes for the report.
class MetricScanner {
 public:
  explicit MetricScanner(std::string metric);
  void feed(std::string_view data);
  // The metric; errors as extract_metric's. Call once, after the last feed.
  Result<double> finish();
  // The last kReferenceTailBytes of everything fed.
  [[nodiscard]] std::string tail() const;

 private:
  [[nodiscard]] Error fail(const std::string& message) const;
  [[nodiscard]] std::optional<Result<double>> from_json(const nlohmann::json& j) const;
  void scan_line();
  std::string metric_;
  bool regex_ = false;
  std::shared_ptr<std::regex> re_;
  std::string path_;
  std::optional<Error> broken_;  ///< an invalid regex or an empty key path
  std::string line_;             ///< the line being read (bounded)
  std::string whole_;            ///< the stream, while it fits kReferenceWholeBytes (json only)
  bool whole_too_big_ = false;
  std::string tail_;
  std::optional<std::string> last_text_;     ///< regex: the last match's text
  std::optional<Result<double>> last_value_;  ///< json: the last line holding the key
};

}  // namespace

const char* to_string(ReferenceStatus status) {
  switch (status) {
    case ReferenceStatus::Pass: return "pass";
    case ReferenceStatus::Fail: return "fail";
    case ReferenceStatus::Measured: return "measured";
    case ReferenceStatus::NoRecordedValue: return "no-recorded-value";
    case ReferenceStatus::NoReference: return "no-reference";
    case ReferenceStatus::CommandMissing: return "command-missing";
    case ReferenceStatus::CommandFailed: return "command-failed";
    case ReferenceStatus::Crashed: return "crashed";
    case ReferenceStatus::TimedOut: return "timed-out";
    case ReferenceStatus::NoMetric: return "no-metric";
    case ReferenceStatus::BadMetric: return "bad-metric";
    case ReferenceStatus::Interrupted: return "interrupted";
  }
  return "fail";
}

std::vector<std::string> reference_environment(const ReferenceRunOptions& options) {
  auto env = [&](const std::string& name) -> std::optional<std::string> {
    return options.getenv ? options.getenv(name) : process_getenv(name);
  };
  std::map<std::string, std::string> vars;
  std::set<std::string> pass(std::begin(kDefaultPassThrough), std::end(kDefaultPassThrough));
  pass.insert(options.keep_env.begin(), options.keep_env.end());
  for (const auto& name : pass) {
    if (auto v = env(name)) vars[name] = *v;
  }
  const std::string prefix = options.prefix.string();
  vars["PATH"] = prefix + "/bin:/usr/local/bin:/usr/bin:/bin";
  if (std::find(options.keep_env.begin(), options.keep_env.end(), "PATH") != options.keep_env.end()) {
    if (auto v = env("PATH")) vars["PATH"] = prefix + "/bin:" + *v;
  }
  vars["CONDA_PREFIX"] = prefix;
  vars["CONDA_DEFAULT_ENV"] = options.environment_name.empty() ? prefix : options.environment_name;
  vars["CONDA_SHLVL"] = "1";
  vars["PYTHONNOUSERSITE"] = "1";
  std::vector<std::string> out;
  for (const auto& [k, v] : vars) out.push_back(k + "=" + v);
  return out;
}

namespace {

MetricScanner::MetricScanner(std::string metric) : metric_(std::move(metric)) {
  regex_ = metric_.starts_with("regex:");
  if (regex_) {
    try {
      re_ = std::make_shared<std::regex>(metric_.substr(6), std::regex::ECMAScript);
    } catch (const std::regex_error& ex) {
      Error e = fail(std::string("invalid regular expression: ") + ex.what());
      e.hint = "write an ECMAScript regex with one group around the number, e.g. regex:loss=([0-9.eE+-]+)";
      broken_ = e;
    }
  } else {
    path_ = metric_.starts_with("json:") ? metric_.substr(5) : metric_;
    if (path_.empty()) broken_ = fail("empty JSON key path");
  }
}

Error MetricScanner::fail(const std::string& message) const {
  Error e;
  e.kind = ErrorKind::Parse;
  e.where = "metric " + metric_;
  e.message = message;
  return e;
}

void MetricScanner::feed(std::string_view data) {
  tail_.append(data);
  if (tail_.size() > 2 * kReferenceTailBytes) tail_.erase(0, tail_.size() - kReferenceTailBytes);
  if (broken_) return;
  if (!regex_) {
    if (whole_.size() + data.size() <= kReferenceWholeBytes) whole_.append(data);
    else whole_too_big_ = true;
  }
  // A regex meets a bounded excerpt of each line: std::regex recurses once per character it
  // matches, so an unbounded line would overflow the stack. A JSON line is kept up to the bound.
  const std::size_t keep = regex_ ? kReferenceRegexLineBytes : kReferenceWholeBytes;
  while (!data.empty()) {
    const std::size_t nl = data.find('\n');
    const std::string_view piece = data.substr(0, nl);
    if (line_.size() < keep) line_.append(piece.substr(0, keep - line_.size()));
    if (nl == std::string_view::npos) break;
    scan_line();
    data.remove_prefix(nl + 1);
  }
}

void MetricScanner::scan_line() {
  std::string line = std::move(line_);
  line_.clear();
  if (!line.empty() && line.back() == '\r') line.pop_back();
  if (regex_) {
    std::optional<std::string> found;
    for (std::sregex_iterator it(line.begin(), line.end(), *re_), end; it != end; ++it) {
      found = it->size() > 1 ? (*it)[1].str() : (*it)[0].str();
    }
    if (found) last_text_ = std::move(found);
    return;
  }
  const auto first = line.find_first_not_of(" \t");
  if (first == std::string::npos || line[first] != '{') return;
  const auto j = nlohmann::json::parse(line, nullptr, false);
  if (j.is_discarded()) return;
  if (auto r = from_json(j)) last_value_ = std::move(*r);
}

std::optional<Result<double>> MetricScanner::from_json(const nlohmann::json& j) const {
  const nlohmann::json* v = at_path(j, path_);
  if (v == nullptr) return std::nullopt;
  if (v->is_number()) return Result<double>(v->get<double>());
  if (v->is_string()) {
    if (auto d = to_double(v->get<std::string>())) return Result<double>(*d);
  }
  return Result<double>(fail("the value at '" + path_ + "' is not a number: " + v->dump()));
}

Result<double> MetricScanner::finish() {
  if (broken_) return *broken_;
  if (!line_.empty()) scan_line();  // a last line without a newline
  if (regex_) {
    if (!last_text_) return fail("no line of the output matches the regular expression");
    if (auto v = to_double(*last_text_)) return *v;
    return fail("the match '" + *last_text_ + "' is not a number");
  }
  // The whole output as one JSON document, when it is not too big to hold; else the last line
  // that is a JSON object holding the key.
  if (!whole_too_big_) {
    const auto whole = nlohmann::json::parse(whole_, nullptr, false);
    if (!whole.is_discarded()) {
      if (auto r = from_json(whole)) return *r;
    }
  }
  if (last_value_) return *last_value_;
  return fail("no JSON object in the output has the key '" + path_ + "'");
}

std::string MetricScanner::tail() const { return tail_.size() <= kReferenceTailBytes ? tail_ : tail_.substr(tail_.size() - kReferenceTailBytes); }

}  // namespace

Result<double> extract_metric(const std::string& metric, const std::string& output) {
  MetricScanner scanner(metric);
  scanner.feed(output);
  return scanner.finish();
}

ReferenceOutcome run_reference(const ReferenceRun& reference, const ReferenceRunOptions& options) {
  ReferenceOutcome o;
  o.command = reference.command;
  o.metric = reference.metric;
  o.tolerance = reference.tolerance;
  o.recorded = reference.recorded_value;
  if (reference.command.empty()) {
    o.status = ReferenceStatus::NoReference;
    o.message = "no reference command";
    o.hint = "add `reference: {command: ..., metric: json:<key>, tolerance: ...}` to the manifest and run envlock lock";
    return o;
  }
  if (reference.metric.empty() || reference.metric == "json:" || reference.metric == "regex:") {
    o.status = ReferenceStatus::BadMetric;
    o.message = "the reference has no metric to read";
    o.hint = "set reference.metric to json:<key path> or regex:<expression with one group>";
    return o;
  }
  const std::string script =
      "for envlock_f in \"$CONDA_PREFIX\"/etc/conda/activate.d/*.sh; do\n"
      "  [ -f \"$envlock_f\" ] && . \"$envlock_f\"\n"
      "done\n"
      "unset envlock_f\n" +
      reference.command + "\n";
  if (InterruptScope::received() != 0) {
    o.status = ReferenceStatus::Interrupted;
    o.message = "interrupted by " + signal_name(InterruptScope::received()) + " before the command ran";
    return o;
  }
  MetricScanner out(reference.metric), err(reference.metric);
  // In a process group of its own, killed at the deadline, on SIGINT/SIGTERM and once the
  // command itself has exited (stray background children). Each chunk goes to its scanner as
  // it arrives: nothing is dropped, however much is printed.
  SpawnOptions spawn;
  spawn.argv = {"/bin/sh", "-c", script};
  spawn.environment = reference_environment(options);
  spawn.working_directory = options.working_directory;
  spawn.group = ProcessGroup::Own;
  WaitOptions wait;
  wait.timeout = std::chrono::seconds(std::max(1, options.timeout_s));
  wait.on_out = [&out](std::string_view chunk) { out.feed(chunk); };
  wait.on_err = [&err](std::string_view chunk) { err.feed(chunk); };
  wait.stop = [] { return InterruptScope::received() != 0; };
  wait.strays = Strays::Kill;
  ChildResult c = run_process(spawn, wait);
  std::error_code cwd_ec;
  if (c.start_error && c.start_error->step == "posix_spawn" && !options.working_directory.empty() &&
      !fs::is_directory(options.working_directory, cwd_ec)) {
    // A working folder that cannot be entered reads as the command that could not be executed.
    err.feed("envlock: cannot enter the working directory\n");
    c = ChildResult{};
    c.exit_status = 126;
  }
  o.exit_status = c.exit_status;
  o.signal = c.signal;
  if (c.stopped) {
    o.status = ReferenceStatus::Interrupted;
    o.message = "interrupted by " + signal_name(InterruptScope::received()) + ": the command was stopped";
    return o;
  }
  const std::string out_tail = out.tail(), err_tail = err.tail();
  o.output_tail = tail(out_tail + (out_tail.empty() || err_tail.empty() ? "" : "\n") + err_tail, kReferenceTailBytes);
  if (c.start_error) {
    o.status = ReferenceStatus::CommandFailed;
    o.message = "could not start the command: " + c.start_error->message();
    return o;
  }
  if (c.timed_out) {
    o.status = ReferenceStatus::TimedOut;
    o.message = "the command did not finish within " + std::to_string(options.timeout_s) + " s and was killed";
    o.hint = "raise --timeout, or make the reference command a shorter smoke run";
    return o;
  }
  if (c.signal != 0) {
    o.status = ReferenceStatus::Crashed;
    o.message = "the command was killed by " + signal_name(c.signal);
    o.hint = "run it by hand in the environment to see the crash";
    return o;
  }
  if (c.exit_status == 127 || c.exit_status == 126) {
    o.status = ReferenceStatus::CommandMissing;
    o.message = std::string("the command ") + (c.exit_status == 127 ? "was not found" : "could not be executed") +
                " in the environment (exit " + std::to_string(c.exit_status) + ")";
    o.hint = "check that the environment provides it: PATH is " + options.prefix.string() + "/bin:/usr/local/bin:/usr/bin:/bin";
    return o;
  }
  if (c.exit_status != 0) {
    o.status = ReferenceStatus::CommandFailed;
    o.message = "the command exited with status " + std::to_string(c.exit_status);
    o.hint = "see the output below";
    return o;
  }
  auto value = out.finish();
  if (!value) value = err.finish();
  if (!value) {
    o.status = reference.metric.starts_with("regex:") && value.error().message.starts_with("invalid") ? ReferenceStatus::BadMetric
                                                                                                        : ReferenceStatus::NoMetric;
    o.message = "the command printed no metric " + reference.metric + ": " + value.error().message;
    o.hint = value.error().hint.empty() ? "make the command print e.g. {\"loss\": 0.41} on its last line" : value.error().hint;
    return o;
  }
  o.value = *value;
  if (!reference.recorded_value) {
    o.status = ReferenceStatus::Measured;
    o.message = reference.metric + " = " + format_number(*value);
    return o;
  }
  const double diff = std::fabs(*value - *reference.recorded_value);
  if (diff <= reference.tolerance) {
    o.status = ReferenceStatus::Pass;
    o.message = reference.metric + " = " + format_number(*value) + ", recorded " + format_number(*reference.recorded_value) +
                " (difference " + format_number(diff) + " <= tolerance " + format_number(reference.tolerance) + ")";
  } else {
    o.status = ReferenceStatus::Fail;
    o.message = reference.metric + " = " + format_number(*value) + ", recorded " + format_number(*reference.recorded_value) +
                " (difference " + format_number(diff) + " > tolerance " + format_number(reference.tolerance) + ")";
    o.hint = "compare both hosts' facts below; if the change is expected, run envlock reference record again";
  }
  return o;
}

std::string side_by_side(const std::map<std::string, std::string>& recorded, const std::map<std::string, std::string>& now) {
  std::set<std::string> keys;
  for (const auto& [k, v] : recorded) keys.insert(k);
  for (const auto& [k, v] : now) keys.insert(k);
  std::size_t width = 0, left = 8;
  for (const auto& k : keys) {
    width = std::max(width, k.size());
    if (auto it = recorded.find(k); it != recorded.end()) left = std::max(left, it->second.size());
  }
  auto pad = [](std::string s, std::size_t n) {
    s.resize(std::max(n, s.size()), ' ');
    return s;
  };
  std::string out = "  " + pad("", width) + "  " + pad("recorded", left) + " | now\n";
  for (const auto& k : keys) {
    const auto r = recorded.count(k) ? recorded.at(k) : std::string("-");
    const auto n = now.count(k) ? now.at(k) : std::string("-");
    out += (r == n ? "  " : "* ") + pad(k, width) + "  " + pad(r, left) + " | " + n + "\n";
  }
  return out;
}

}  // namespace envlock
