// Reference runs: the command inside the environment, its metric, the tolerance compare.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "envlock/reference.hpp"

extern char** environ;

namespace envlock {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t kTailBytes = 4096;
constexpr std::size_t kMaxOutput = 16u << 20;  // bytes kept per stream (the metric is read from it)

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
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  std::size_t start = 0;
  while (start < s.size() && std::isspace(static_cast<unsigned char>(s[start]))) ++start;
  s = s.substr(start);
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

struct Captured {
  std::string out, err;
  int exit_status = -1;
  int signal = 0;
  bool timed_out = false;
  std::string spawn_error;
};

// Runs argv with envp in `cwd` in a new process group; captures stdout/stderr; kills the group at
// the deadline and once the command itself has exited (stray background children).
Captured spawn(const std::vector<std::string>& argv, const std::vector<std::string>& envp, const fs::path& cwd, int timeout_s) {
  Captured c;
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) {
    c.spawn_error = std::string("pipe: ") + std::strerror(errno);
    return c;
  }
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    c.spawn_error = std::string("pipe: ") + std::strerror(errno);
    close(out_pipe[0]);
    close(out_pipe[1]);
    return c;
  }
  std::vector<char*> av, ev;
  for (const auto& a : argv) av.push_back(const_cast<char*>(a.c_str()));
  av.push_back(nullptr);
  for (const auto& e : envp) ev.push_back(const_cast<char*>(e.c_str()));
  ev.push_back(nullptr);
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) {
    c.spawn_error = std::string("fork: ") + std::strerror(errno);
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) close(fd);
    return c;
  }
  if (pid == 0) {
    setpgid(0, 0);
    dup2(out_pipe[1], STDOUT_FILENO);
    dup2(err_pipe[1], STDERR_FILENO);
    const int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, STDIN_FILENO);
    if (!cwd.empty() && chdir(cwd.c_str()) != 0) {
      const char msg[] = "envlock: cannot enter the working directory\n";
      (void)!write(STDERR_FILENO, msg, sizeof msg - 1);
      _exit(126);
    }
    execve(av[0], av.data(), ev.data());
    _exit(127);
  }
  setpgid(pid, pid);
  close(out_pipe[1]);
  close(err_pipe[1]);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  bool out_open = true, err_open = true, exited = false;
  int status = 0;
  auto drain = [&](int fd, std::string& into, bool& open_flag) {
    char buf[8192];
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0) {
      if (into.size() < kMaxOutput) into.append(buf, static_cast<std::size_t>(n));
    } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
      open_flag = false;
    }
  };
  while (out_open || err_open) {
    if (!exited && waitpid(pid, &status, WNOHANG) == pid) exited = true;
    const auto now = std::chrono::steady_clock::now();
    if (!exited && now >= deadline) {
      c.timed_out = true;
      break;
    }
    pollfd fds[2] = {{out_open ? out_pipe[0] : -1, POLLIN, 0}, {err_open ? err_pipe[0] : -1, POLLIN, 0}};
    const int ready = poll(fds, 2, 100);
    if (ready < 0 && errno != EINTR) break;
    if (ready > 0) {
      if (fds[0].revents != 0) drain(out_pipe[0], c.out, out_open);
      if (fds[1].revents != 0) drain(err_pipe[0], c.err, err_open);
    } else if (exited) {
      break;  // the command is gone and a background child holds the pipes: stop reading
    }
  }
  kill(-pid, SIGKILL);  // the timed-out command, or stray children of a finished one
  close(out_pipe[0]);
  close(err_pipe[0]);
  if (!exited) {
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  if (!c.timed_out) {
    if (WIFEXITED(status)) c.exit_status = WEXITSTATUS(status);
    else if (WIFSIGNALED(status)) c.signal = WTERMSIG(status);
  }
  return c;
}

std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev != nullptr ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

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
  }
  return "fail";
}

std::vector<std::string> reference_environment(const ReferenceRunOptions& options) {
  auto env = [&](const std::string& name) -> std::optional<std::string> {
    if (options.getenv) return options.getenv(name);
    const char* v = std::getenv(name.c_str());
    return v ? std::optional<std::string>(v) : std::nullopt;
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

Result<double> extract_metric(const std::string& metric, const std::string& output) {
  auto fail = [&](const std::string& message) {
    Error e;
    e.kind = ErrorKind::Parse;
    e.where = "metric " + metric;
    e.message = message;
    return e;
  };
  if (metric.starts_with("regex:")) {
    const std::string pattern = metric.substr(6);
    std::regex re;
    try {
      re = std::regex(pattern, std::regex::ECMAScript);
    } catch (const std::regex_error& ex) {
      Error e = fail(std::string("invalid regular expression: ") + ex.what());
      e.hint = "write an ECMAScript regex with one group around the number, e.g. regex:loss=([0-9.eE+-]+)";
      return e;
    }
    std::optional<std::smatch> last;
    for (std::sregex_iterator it(output.begin(), output.end(), re), end; it != end; ++it) last = *it;
    if (!last) return fail("no line of the output matches the regular expression");
    const std::string text = last->size() > 1 ? (*last)[1].str() : (*last)[0].str();
    if (auto v = to_double(text)) return *v;
    return fail("the match '" + text + "' is not a number");
  }
  const std::string path = metric.starts_with("json:") ? metric.substr(5) : metric;
  if (path.empty()) return fail("empty JSON key path");
  auto from = [&](const nlohmann::json& j) -> std::optional<Result<double>> {
    const nlohmann::json* v = at_path(j, path);
    if (v == nullptr) return std::nullopt;
    if (v->is_number()) return Result<double>(v->get<double>());
    if (v->is_string()) {
      if (auto d = to_double(v->get<std::string>())) return Result<double>(*d);
    }
    return Result<double>(fail("the value at '" + path + "' is not a number: " + v->dump()));
  };
  const auto whole = nlohmann::json::parse(output, nullptr, false);
  if (!whole.is_discarded()) {
    if (auto r = from(whole)) return *r;
  }
  // Else the last line that is a JSON object holding the key.
  std::vector<std::string> lines;
  std::stringstream ss(output);
  for (std::string line; std::getline(ss, line);) lines.push_back(line);
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
    const auto first = it->find_first_not_of(" \t\r");
    if (first == std::string::npos || (*it)[first] != '{') continue;
    const auto j = nlohmann::json::parse(*it, nullptr, false);
    if (j.is_discarded()) continue;
    if (auto r = from(j)) return *r;
  }
  return fail("no JSON object in the output has the key '" + path + "'");
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
  const Captured c = spawn({"/bin/sh", "-c", script}, reference_environment(options), options.working_directory,
                           std::max(1, options.timeout_s));
  o.exit_status = c.exit_status;
  o.signal = c.signal;
  o.output_tail = tail(c.out + (c.out.empty() || c.err.empty() ? "" : "\n") + c.err, kTailBytes);
  if (!c.spawn_error.empty()) {
    o.status = ReferenceStatus::CommandFailed;
    o.message = "could not start the command: " + c.spawn_error;
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
  auto value = extract_metric(reference.metric, c.out);
  if (!value) value = extract_metric(reference.metric, c.err);
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
