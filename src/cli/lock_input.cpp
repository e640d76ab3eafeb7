// Reading lockfiles named on the command line: PATH, '-', REV:PATH (see lock_input.hpp).
#include "lock_input.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include "envlock/process.hpp"

namespace envlock::cli {
namespace {

struct CommandOutput {
  int status = -1;
  std::string out;
  std::string err;
};

// Runs argv (no shell, found in PATH, envlock's stdin) and captures stdout and stderr, each up
// to kMaxLockfileBytes: past it git is killed and the input refused as a file that large is
// (`where`), so `git show REV:PATH` of a blob of GBs costs no GBs of memory. A program that cannot
// be started is status 127, as a shell reports it.
Result<CommandOutput> run_capture(const std::vector<std::string>& argv, const std::string& where) {
  SpawnOptions spawn;
  spawn.argv = argv;
  spawn.lookup = ProgramLookup::Path;
  spawn.input = ChildInput::Inherit;
  WaitOptions wait;
  wait.capture_limit = static_cast<std::size_t>(kMaxLockfileBytes);
  wait.over_limit = OverLimit::Stop;
  ChildResult r = run_process(spawn, wait);
  if (r.start_error && r.start_error->step == "pipe") {
    return Error{ErrorKind::Io, argv[0], std::strerror(r.start_error->error_number), "", ""};
  }
  if (r.overflowed) return input_too_large(where);
  CommandOutput result;
  result.status = r.start_error ? 127 : r.exit_status;
  result.out = std::move(r.out);
  result.err = std::move(r.err);
  return result;
}

constexpr std::string_view kSnapshotHeader = "# envlock snapshot";

// The folder in the working tree of the file `git show REV:PATH` read, so its relative local
// channels resolve as they do for the checked-out file: PATH is relative to the top level of the
// working tree, or to the current folder when it starts with ./ or ../ (gitrevisions(7)). Empty
// (channels kept as written) when there is no working tree, e.g. in a bare repository.
std::filesystem::path revision_file_folder(const std::string& path) {
  std::error_code ec;
  const auto cwd = std::filesystem::current_path(ec);
  if (ec) return {};
  std::filesystem::path base = cwd;
  if (!(path.starts_with("./") || path.starts_with("../"))) {
    // `--show-cdup`: the way from the current folder up to the top level ("" or "../../"),
    // taken from the same current folder the other side's relative path is.
    auto out = run_capture({"git", "rev-parse", "--show-cdup"}, "git rev-parse");
    if (!out || out->status != 0) return {};
    std::string up = out->out;
    while (!up.empty() && (up.back() == '\n' || up.back() == '\r')) up.pop_back();
    if (!up.empty()) base /= up;
  }
  return (base / std::filesystem::path(path).parent_path()).lexically_normal();
}

// A path argument that is, or passes through, a symbolic link leading out of the git working
// tree the path lies in (a pull request commits `envlock.lock -> /etc/shadow` or
// `-> ../../.aws/credentials`, and CI runs `envlock diff origin/main:envlock.lock envlock.lock`) is
// refused: git itself never follows such a link — it stores the link's target name as the blob,
// `git diff` shows that text, and textconv is not run on links (diff.c, diff_filespec_load_driver
// takes the default driver for anything but a regular file). The working tree is the nearest
// folder above the path, as written, that holds `.git` (a folder, or a file for a worktree or
// submodule); a path in no working tree is read wherever it leads, as the user named it, and so
// is an environment prefix (a folder).
Status check_link_stays_in_repository(const std::string& arg) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path written = fs::absolute(arg, ec).lexically_normal();
  if (ec) return ok_status();
  const fs::path real = fs::canonical(written, ec);
  if (ec) return ok_status();  // missing: the reader names it
  // A prefix is a folder of the machine, never a committed file: pixi keeps `.pixi/envs` outside
  // the project with `detached-environments`, through a link.
  if (fs::is_directory(real, ec)) return ok_status();
  for (fs::path dir = written.parent_path();; dir = dir.parent_path()) {
    if (fs::exists(dir / ".git", ec)) {
      const fs::path top = fs::canonical(dir, ec);
      if (ec) return ok_status();
      const auto rel = real.lexically_relative(top);
      if (!rel.empty() && *rel.begin() != "..") return ok_status();
      return Error{ErrorKind::Io, arg, "is a symbolic link that leads outside its git repository; it is not read", "",
                   "git stores a link as the name of its target and never follows it (`git diff` shows that name); "
                   "pass the lockfile itself, or REV:PATH to read what a commit holds"};
    }
    if (dir == dir.root_path() || dir.empty()) return ok_status();
  }
}

// REV:PATH that git holds as a symbolic link (mode 120000): `git show` prints the link's target
// name, as git reads every link, never the file it names. That name is no lockfile: refused with
// what it is, instead of "is not a YAML map". PATH is relative to the top level unless it starts
// with ./ or ../ (gitrevisions(7)), as ls-tree reads it with --full-tree or without.
bool revision_path_is_link(const std::string& rev, const std::string& path) {
  std::vector<std::string> argv = {"git", "ls-tree", "-z"};
  if (!(path.starts_with("./") || path.starts_with("../"))) argv.push_back("--full-tree");
  argv.insert(argv.end(), {"--end-of-options", rev, "--", path});
  auto out = run_capture(argv, rev + ":" + path);
  return out && out->status == 0 && out->out.starts_with("120000 ");
}

}  // namespace

Result<LockInput> read_lock_input(const std::string& arg, LocalChannels channels) {
  LockInput input;
  input.label = arg;
  const bool as_written = channels == LocalChannels::AsWritten;
  if (arg == "-") {
    auto bounded = read_bounded_input(std::cin, "<stdin>");  // `- </dev/zero` must end
    if (!bounded) return bounded.error();
    std::string text = std::move(bounded).value();
    // Text from standard input has no folder of its own: relative local channels resolve against
    // the current folder (docs/review.md), as a file in it would.
    std::error_code cwd_ec;
    const auto cwd = std::filesystem::current_path(cwd_ec);
    input.directory = cwd_ec || as_written ? std::filesystem::path() : cwd;
    auto r = read_lockfile_text(text, "<stdin>", input.directory);
    if (!r) return r.error();
    input.read = std::move(r).value();
    if (text.starts_with(kSnapshotHeader)) input.snapshot_text = std::move(text);
    return input;
  }
  std::error_code ec;
  const auto colon = arg.find(':');
  const bool rev_form = colon != std::string::npos && colon > 0 && arg.find("://") == std::string::npos;
  const bool is_file = std::filesystem::exists(arg, ec);
  // A file whose name has the REV:PATH form (a pull request can commit `origin/main:envlock.lock`)
  // while REV is a revision git resolves is refused as ambiguous, as git refuses `git show X` when
  // X is both a revision and a file ("ambiguous argument: both revision and filename"): either
  // reading would let the other one be faked. `./NAME` (or any path starting with `/`, `./`,
  // `../`) is always the file.
  if (rev_form && is_file && !arg.starts_with('/') && !arg.starts_with("./") && !arg.starts_with("../") &&
      !arg.starts_with('-')) {
    const std::string rev = arg.substr(0, colon);
    auto out = run_capture({"git", "rev-parse", "--verify", "--quiet", "--end-of-options", rev + "^{tree}"}, arg);
    if (out && out->status == 0) {
      return Error{ErrorKind::Usage, arg,
                   "ambiguous: both a file in the working tree and revision '" + rev + "' of git", "",
                   "write ./" + arg + " for the file, or remove the file to read it from git (as git asks for '--')"};
    }
  }
  if (!is_file && rev_form) {
    const std::string rev = arg.substr(0, colon);
    const std::string path = arg.substr(colon + 1);
    // A revision never starts with '-' (git check-ref-format refuses such a branch or tag name),
    // and git must not read the argument as an option (`--output=FILE:x` would write FILE):
    // refused here, and `--end-of-options` (git 2.24) makes git take it as a revision whatever it is.
    if (rev.starts_with('-')) {
      return Error{ErrorKind::Usage, arg, "'" + rev + "' is not a git revision: a revision never starts with '-'", "",
                   "name a revision such as HEAD~1:conda-lock.yml; a file whose name starts with '-' is read as ./NAME"};
    }
    auto out = run_capture({"git", "show", "--end-of-options", arg}, arg);
    if (!out) return out.error();
    if (out->status != 0) {
      std::string msg = out->err;
      while (!msg.empty() && (msg.back() == '\n' || msg.back() == '\r')) msg.pop_back();
      if (auto nl = msg.find('\n'); nl != std::string::npos) msg = msg.substr(0, nl);
      if (msg.starts_with("fatal: ")) msg = msg.substr(7);
      Error e;
      e.kind = ErrorKind::Io;
      e.where = arg;
      e.message = out->status == 127 ? "cannot run git to read revision '" + rev + "'"
                                     : "git cannot show '" + path + "' at revision '" + rev + "': " + msg;
      e.hint = "REV:PATH reads PATH as committed in REV (e.g. HEAD~1:conda-lock.yml, main:pixi.lock); "
               "check both with `git show REV:PATH`";
      return e;
    }
    if (revision_path_is_link(rev, path)) {
      return Error{ErrorKind::Io, arg, "is a symbolic link at revision '" + rev + "', not a lockfile; it is not read", "",
                   "git stores a link as the name of its target, which `git show` prints; name the file it links to "
                   "as REV:PATH"};
    }
    input.directory = as_written ? std::filesystem::path() : revision_file_folder(path);
    auto r = read_lockfile_text(out->out, arg, input.directory);
    if (!r) return r.error();
    input.read = std::move(r).value();
    if (out->out.starts_with(kSnapshotHeader)) input.snapshot_text = std::move(out->out);
    return input;
  }
  if (auto st = check_link_stays_in_repository(arg); !st) return st.error();
  auto r = [&]() -> Result<ReadResult> {
    if (!as_written || !std::filesystem::is_regular_file(arg, ec)) return read_lockfile_path(arg);
    std::ifstream in(arg, std::ios::binary);
    if (!in) return Error{ErrorKind::Io, arg, "cannot open the file for reading", "", "check the path"};
    auto text = read_bounded_input(in, arg);
    if (!text) return text.error();
    return read_lockfile_text(*text, arg);  // no folder: channels as written
  }();
  if (!r) return r.error();
  input.read = std::move(r).value();
  if (!as_written) input.directory = std::filesystem::absolute(arg, ec).parent_path();  // as read_lockfile_path
  if (input.read.format.format == LockFormat::Envlock) {  // a snapshot's lockfile part is envlock.lock
    std::ifstream in(arg, std::ios::binary);
    std::string head(kSnapshotHeader.size(), '\0');
    if (in.read(head.data(), static_cast<std::streamsize>(head.size())) && head == kSnapshotHeader) {
      auto rest = read_bounded_input(in, arg);
      if (!rest) return rest.error();
      input.snapshot_text = head + *rest;
    }
  }
  return input;
}

Result<Lockfile> read_envlock_lockfile(const std::string& path, const std::string& command) {
  auto lf = Lockfile::read(path);
  if (lf || lf.error().kind == ErrorKind::Io) return lf;
  // Not envlock.lock: name the format the readers recognise (the same detection `show` and
  // `diff` use), within the size Lockfile::read accepts.
  std::error_code ec;
  if (const auto size = std::filesystem::file_size(path, ec); ec || size > kMaxLockfileBytes) return lf;
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in) return lf;
  auto found = detect_lock_format(text.str(), path);
  if (!found) return lf;
  std::string tool;
  switch (found->format) {
    case LockFormat::Envlock:
    case LockFormat::CondaMeta: return lf;
    case LockFormat::CondaLock: tool = found->by_pixi ? "`pixi install`" : "`conda-lock install`"; break;
    case LockFormat::PixiLock: tool = "`pixi install`"; break;
    case LockFormat::Explicit: tool = "`conda create --file " + path + "`"; break;
  }
  const std::string name = found->to_string();
  return Error{ErrorKind::Parse, path,
               "is a " + name + " file, not an envlock.lock; `envlock " + command + "` reads envlock.lock only", "",
               "`envlock show` and `envlock diff` read it as it is; install it with " + tool +
                   ", or lock the same environment with `envlock lock -f environment.yml` and pass the "
                   "envlock.lock that writes"};
}

}  // namespace envlock::cli
