// The install transaction: stage, link, carry over, conda-meta, post-link, swap; and remove.
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <chrono>
#include <ctime>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "envlock/atomic_file.hpp"
#include "envlock/install.hpp"
#include "envlock/process.hpp"
#include "envlock/settings.hpp"
#include "envlock/text.hpp"
#include "envlock/url.hpp"
#include "fs_util.hpp"
#include "generation_hooks.hpp"
#include "link.hpp"

extern char** environ;

namespace envlock {

namespace fs = std::filesystem;
using detail::fsync_dir;
using detail::io_error;

namespace {

constexpr const char* kOriginFile = "envlock";

/// Sibling names of a prefix: `<parent>/.<name>.envlock-<what>`.
fs::path sibling(const fs::path& prefix, const std::string& what) {
  return prefix.parent_path() / ("." + prefix.filename().string() + ".envlock-" + what);
}

/// Creates this install's staging folder beside `prefix`, `.<name>.envlock-stage-<pid>-<n>`, with a
/// counter of this process for n: unique among envlock's own processes without an entropy source
/// (std::random_device throws where none is readable). mkdir(2) never reuses what is there (as
/// O_EXCL), so a name already taken (a folder or link planted beside the prefix after recover()
/// ran) takes the next n instead of failing the install.
Result<fs::path> make_stage_folder(const fs::path& prefix) {
  static std::atomic<unsigned> counter{0};
  for (int attempt = 0;; ++attempt) {
    const fs::path stage = sibling(prefix, "stage-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    if (::mkdir(stage.c_str(), 0755) == 0) return stage;
    if (errno != EEXIST || attempt == 99) return io_error(stage, "cannot create the staging folder", errno);
  }
}

/// Holds flock(2) on the prefix's lock file `<parent>/.<name>.envlock-lock` for the lifetime
/// of the object. The file stays after an install (deleting it would race with a process that
/// waits on it); remove_environment() deletes it with the environment, which is safe because
/// acquire() checks, once it holds the lock, that the path still names the file it locked, and
/// starts again on a new file otherwise.
class PrefixLock {
 public:
  /// `on_wait`, when set, is called once (naming `prefix`) if another process holds the lock.
  static Result<PrefixLock> acquire(const fs::path& prefix, const LockWait& on_wait = {}) {
    const fs::path path = sibling(prefix, "lock");
    bool told = false;
    for (;;) {
      // Never through a link planted beside the prefix (root would create or lock a file
      // anywhere: a new-user attack, session 10), and only a regular file.
      const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
      if (fd < 0 && errno == ELOOP)
        return Error{ErrorKind::Io, path.string(), "is a symbolic link, not the lock file envlock makes", "",
                     "remove it (someone may have planted it), then run the command again"};
      if (fd < 0) return io_error(path, "cannot create the prefix lock file", errno);
      if (struct stat st {}; ::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        return Error{ErrorKind::Io, path.string(), "is not a regular file, not the lock file envlock makes", "",
                     "remove it, then run the command again"};
      }
      if (::flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK && on_wait && !told) {
        told = true;
        on_wait(prefix);
      }
      while (::flock(fd, LOCK_EX) != 0) {
        if (errno == EINTR) continue;
        const int err = errno;
        ::close(fd);
        return io_error(path, "cannot lock", err);
      }
      struct stat held {}, named {};
      if (::fstat(fd, &held) == 0 && ::stat(path.c_str(), &named) == 0 && held.st_dev == named.st_dev &&
          held.st_ino == named.st_ino)
        return PrefixLock(fd);
      ::close(fd);  // unlinked by a remove meanwhile: lock the new file
    }
  }
  PrefixLock(PrefixLock&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  PrefixLock& operator=(PrefixLock&&) = delete;
  ~PrefixLock() {
    if (fd_ >= 0) ::close(fd_);
  }

 private:
  explicit PrefixLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

fs::path normalized_prefix(const fs::path& prefix) {
  fs::path p = fs::absolute(prefix).lexically_normal();
  if (p.has_filename()) return p;
  return p.parent_path();
}

/// An empty prefix is refused by every entry point that takes one (the CLI refuses an empty -p
/// before, but a library caller must get the same answer, not the current folder).
Status nonempty_prefix(const fs::path& given) {
  if (given.empty()) {
    return Error{ErrorKind::Usage, "-p/--prefix", "is empty", "", "pass the environment folder with -p PREFIX"};
  }
  return ok_status();
}

/// The checks every command that takes -p makes before touching anything (nothing is written):
/// not empty, not the filesystem root, not a symlink (conda refuses those too: renaming a new tree
/// onto a link would replace the link, and deleting it would leave the target). Returns the
/// absolute, normalized prefix.
Result<fs::path> checked_prefix(const fs::path& given) {
  if (auto st = nonempty_prefix(given); !st) return st.error();
  std::error_code ec;
  const fs::path prefix = normalized_prefix(fs::path(given));
  if (prefix == prefix.root_path()) {
    return Error{ErrorKind::Io, prefix.string(), "is the filesystem root; refusing to use it as an environment", "",
                 "choose a dedicated folder as the prefix"};
  }
  // A kept generation's tree (`.NAME.envlock-generations/N`, the path `history --json` prints) or
  // anything in that folder is envlock's, changed only by rollback and gc: as a prefix, an install
  // or remove there made the generation vanish from NAME's history (attack 30, F5), as a prefix
  // inside another environment is refused.
  constexpr std::string_view kGenerations = ".envlock-generations";
  for (fs::path up = prefix; up.has_relative_path(); up = up.parent_path()) {
    const std::string n = up.filename().string();
    if (n.size() <= kGenerations.size() + 1 || n.front() != '.' || !n.ends_with(kGenerations)) continue;
    const fs::path owner = up.parent_path() / n.substr(1, n.size() - kGenerations.size() - 1);
    const std::string first = prefix == up ? std::string() : prefix.lexically_relative(up).begin()->string();
    const bool numbered = !first.empty() && std::all_of(first.begin(), first.end(), [](char c) { return c >= '0' && c <= '9'; });
    return Error{ErrorKind::Io, prefix.string(),
                 prefix == up ? "is the generations folder of " + owner.string()
                              : "is inside " + up.string() + ", the generations folder of " + owner.string(),
                 "a kept generation is changed only by envlock rollback and gc; used as a prefix it would vanish from "
                 "the history of " + owner.string() + "; nothing was changed",
                 numbered ? "to make generation " + first + " current: envlock rollback -p " + owner.string() + " --to " +
                                first
                          : "envlock history -p " + owner.string() + " lists its generations"};
  }
  if (fs::is_symlink(fs::symlink_status(prefix, ec))) {
    const fs::path target = fs::read_symlink(prefix, ec);
    return Error{ErrorKind::Io, prefix.string(), "is a symbolic link (to " + target.string() + ")", "",
                 "pass the real folder with -p (as conda, envlock does not follow a prefix that is a link)"};
  }
  return prefix;
}

/// Reads every `conda-meta/*.json` record; a record that cannot be read or parsed is skipped
/// with a warning naming it (its file name goes to `damaged`), so that one damaged file does not
/// make the environment impossible to change or remove.
std::vector<PrefixRecord> read_records_tolerant(const fs::path& prefix, std::vector<std::string>& warnings,
                                                std::set<std::string>& damaged) {
  std::vector<PrefixRecord> out;
  std::error_code ec;
  std::vector<fs::path> files;
  for (fs::directory_iterator it(prefix / "conda-meta", ec), end; !ec && it != end; it.increment(ec))
    if (it->path().extension() == ".json" && it->is_regular_file(ec)) files.push_back(it->path());
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    auto text = read_conda_meta_record_text(f);  // a regular file of at most 64 MiB (attack 22 A16)
    std::string why;
    if (!text) {
      why = text.error().message;
    } else {
      const nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
      if (j.is_discarded() || !j.is_object()) {
        why = "is not valid JSON";
      } else if (auto rec = PrefixRecord::from_json(j); !rec) {
        why = rec.error().message;
      } else {
        out.push_back(std::move(*rec));
        continue;
      }
    }
    damaged.insert(f.filename().string());
    warnings.push_back("conda-meta/" + f.filename().string() + " " + why +
                       "; skipped (its files are treated as not owned by any package)");
  }
  return out;
}

/// The nearest existing folder at or above `dir`.
fs::path existing_ancestor(fs::path dir) {
  std::error_code ec;
  while (!dir.empty() && !fs::exists(fs::symlink_status(dir, ec)) && dir != dir.root_path()) dir = dir.parent_path();
  return dir;
}

/// The refusal of a prefix that is itself a mount point (or that the kernel will not rename: EBUSY,
/// EXDEV at the swap): the transaction builds the new tree beside it and renames it into place,
/// and removal moves it aside; neither can rename a mount point. conda and rattler (pixi) change a
/// prefix in place and so install into one; envlock refuses before any work, naming what to do.
Error mount_point_refusal(const fs::path& prefix) {
  return Error{ErrorKind::Io, prefix.string(), "is a mount point (another filesystem than its parent folder)",
               "envlock builds an environment beside its prefix and renames it into place (and moves it aside to "
               "remove it), which cannot be done to a mount point; nothing was changed",
               "use a folder inside the mount as the prefix (for example " + (prefix / "env").string() +
                   "), or mount the filesystem one folder up"};
}

/// Whether the existing folder `prefix` is a mount point: its mount is not its parent's.
bool is_mount_point(const fs::path& prefix) {
  struct stat st {};
  if (::lstat(prefix.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return false;
  const std::uint64_t here = detail::mount_of(prefix), up = detail::mount_of(prefix.parent_path());
  return here != 0 && up != 0 && here != up;
}

/// The longest last component of a prefix: 255 bytes less the longest sibling name's other
/// characters ("." + ".envlock-stage-" + 7-digit pid + "-" + 10-digit number).
constexpr std::size_t kMaxPrefixName = 255 - 34;

/// Checks that `prefix` (already through checked_prefix) may become or be updated as an
/// environment, writing nothing.
Status check_install_target(const fs::path& prefix, ForeignPrefix foreign) {
  // A newline or other control byte in the prefix installs, but no shebang, script or activation
  // line can name it afterwards (a new-user attack, session 8): refused before anything is done,
  // as conda refuses a `:` in an environment path.
  const std::string& text = prefix.native();
  if (std::any_of(text.begin(), text.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; })) {
    return Error{ErrorKind::Usage, prefix.string(), "contains a control character (newline, tab, ...)",
                 "the programs of the environment could not name it in their #! lines and scripts",
                 "choose a prefix without control characters"};
  }
  // A prefix is written into the text of relocated shell scripts (`prefix="@PLACEHOLDER@"` made
  // `prefix="/ci/a";touch x;""`) and into PATH: a character that ends a quoted string, starts a
  // command or splits PATH would make the environment's scripts run part of the path (attack 30,
  // F2: CI workspace paths come from branch names). conda refuses os.pathsep (`:`) in a prefix
  // (conda/cli/main_create.py); envlock refuses the shell's quoting characters too.
  if (const auto bad = text.find_first_of("\"'`$\\;:"); bad != std::string::npos) {
    return Error{ErrorKind::Io, prefix.string(), std::string("contains '") + text[bad] + "'",
                 "the environment's relocated scripts would hold the path in their text, where it ends a quoted "
                 "string or runs a command, and PATH would split at ':'",
                 "choose a prefix made of letters, digits, spaces and - _ . / + = @ , % ~"};
  }
  // The transaction's sibling names (`.<name>.envlock-stage-<pid>-<n>`, the longest) must fit in
  // a file name (255 bytes on every Linux filesystem): checked now, not after the downloads.
  if (const std::size_t name = prefix.filename().native().size(); name > kMaxPrefixName) {
    return Error{ErrorKind::Usage, prefix.string(),
                 "has a last component of " + std::to_string(name) + " bytes; envlock allows at most " +
                     std::to_string(kMaxPrefixName),
                 "the install keeps its lock and staging folders beside the prefix, named .<name>.envlock-…, "
                 "which must fit in a file name (255 bytes)",
                 "choose a shorter name for the environment folder"};
  }
  // The names envlock gives the folders it keeps beside a prefix (`.<name>.envlock-stage-…`,
  // `-old-`, `-lock`, ...) are its own: an environment made under one is deleted as a leftover by
  // the next install beside it (attack 20, L5).
  if (const std::string name = prefix.filename().string();
      name.starts_with(".") && name.find(".envlock-", 1) != std::string::npos) {
    return Error{ErrorKind::Usage, prefix.string(),
                 "has a name of the form .<name>.envlock-…, which envlock gives the folders it keeps beside an "
                 "environment",
                 "an install beside it would take it for a tree an earlier run left, and delete it",
                 "choose another name for the environment folder"};
  }
  // A prefix through /proc (`/proc/self/cwd/env`, `/proc/<pid>/root/...`), /dev/fd or /sys names
  // another folder for every process, or none (attack 20, L9: it was written into the files and
  // conda-meta/envlock as given). Refused, naming the folder it is now, as conda-meta must name
  // one folder for good.
  std::error_code ec;
  for (fs::path at = prefix; !at.empty(); at = at.parent_path()) {
    fs::path seen = at;
    if (fs::is_symlink(fs::symlink_status(at, ec))) seen = fs::read_symlink(at, ec);
    const std::string seen_text = seen.lexically_normal().generic_string();
    for (const std::string magic : {"/proc", "/sys", "/dev/fd"})
      if (seen_text == magic || seen_text.starts_with(magic + "/")) {
        const fs::path real = fs::weakly_canonical(prefix, ec);
        return Error{ErrorKind::Usage, prefix.string(),
                     "leads through " + magic + ", where a path names another folder for every process (or none)",
                     "the environment's files and conda-meta/envlock record the prefix, which must name one folder",
                     ec || real.empty() ? std::string("pass the real folder with -p")
                                        : "pass the real folder with -p (here " + real.string() + ")"};
      }
    if (at == at.root_path()) break;
  }
  const auto status = fs::symlink_status(prefix, ec);
  if (fs::exists(status)) {
    if (!fs::is_directory(status)) {
      return Error{ErrorKind::Io, prefix.string(), "exists and is not a directory", "",
                   "choose another prefix, or remove that file"};
    }
    if (!fs::is_empty(prefix, ec) && !fs::is_directory(prefix / "conda-meta", ec)) {
      return Error{ErrorKind::Io, prefix.string(),
                   "is a non-empty folder that is not an environment (it has no conda-meta/)", "",
                   "choose a new or empty folder as the prefix"};
    }
    if (is_mount_point(prefix)) return mount_point_refusal(prefix);
    if (foreign == ForeignPrefix::Refuse && fs::is_directory(prefix / "conda-meta", ec) &&
        !fs::exists(fs::symlink_status(prefix / "conda-meta" / kOriginFile, ec))) {
      return Error{ErrorKind::Io, prefix.string(),
                   "holds a conda environment that envlock did not make (conda-meta/ without conda-meta/envlock)",
                   "installing would replace its packages with the lockfile's and drop the ones it lacks",
                   "choose another prefix, or pass --force to make it the lockfile's environment"};
    }
  }
  const fs::path parent = prefix.parent_path();
  // The nearest folder above with conda-meta/ is the environment the prefix would be inside: its
  // files would become that environment's extra files (and an install there could overwrite
  // them). Only its `envs/<name>` (a base prefix's nested environments, which verify and capture
  // leave out: prefix_foreign_folder) is not its own; folders further up see that environment as
  // a nested one and leave it out.
  for (fs::path above = parent; !above.empty(); above = above.parent_path()) {
    if (fs::is_directory(above / "conda-meta", ec)) {
      const fs::path rel = prefix.lexically_relative(above);
      const std::string first = rel.begin()->string();
      if (first == "envs" && std::distance(rel.begin(), rel.end()) >= 2) break;
      return Error{ErrorKind::Io, prefix.string(), "is inside the environment " + above.string(), "",
                   "choose a folder outside that environment as the prefix (a base environment's nested ones go in " +
                       (above / "envs").string() + "/<name>)"};
    }
    if (above == above.root_path()) break;
  }
  const fs::path base = existing_ancestor(parent);
  if (!fs::is_directory(base, ec)) {
    return Error{ErrorKind::Io, base.string(), "is not a directory, so the prefix " + prefix.string() +
                 " cannot be created under it", "", "choose another prefix"};
  }
  if (::access(base.c_str(), W_OK | X_OK) != 0) {
    return io_error(base, "is not writable, so the environment " + prefix.string() + " cannot be created or changed", errno);
  }
  return ok_status();
}

/// Calls `visit(rel, path, folder)` for every path of the environment `prefix` but conda-meta/
/// ('/'-separated `rel`; symbolic links are not followed; a folder before what it holds); the
/// first failing visit, or the walk's own error, is returned.
/// A folder of the environment on another filesystem than the prefix (a bind-mounted dataset, a
/// scratch tmpfs) is refused: the environment's tree is replaced on update and deleted on remove,
/// and neither may copy or delete what is mounted there (conda, changing a prefix in place, never
/// touches such a folder; a new-user attack, session 10, lost a mounted dataset).
/// A folder a running job removed between its listing and its reading (or between the walk's
/// visit and its descent) is skipped with what it held, as a file removed meanwhile is skipped
/// (conda's path_actions.py and rattler's install/ act on what is there): ENOENT, or ENOTDIR
/// when something else took its name.
template <typename Visit>
Status walk_folder(const fs::path& prefix, const fs::path& dir, std::uint64_t root, Visit& visit) {
  const bool top = dir == prefix;
  auto gone = [&](const std::error_code& ec) { return !top && (ec.value() == ENOENT || ec.value() == ENOTDIR); };
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec) return gone(ec) ? ok_status() : io_error(prefix, "cannot walk the environment", ec.value());
  for (const fs::directory_iterator end; it != end; it.increment(ec)) {
    const fs::path path = it->path();
    const std::string rel = path.lexically_relative(prefix).generic_string();
    if (rel == detail::kGuardedFolder) continue;
    std::error_code type_ec;
    const bool folder = it->is_directory(type_ec) && !it->is_symlink(type_ec);
    if (folder) {
      const std::uint64_t mount = detail::mount_of(path);
      if (mount != root && mount != 0) return detail::mount_inside_refusal(path);
    }
    if (auto st = visit(rel, path, folder); !st) return st;
    if (folder)
      if (auto st = walk_folder(prefix, path, root, visit); !st) return st;
  }
  if (ec && !gone(ec)) return io_error(prefix, "cannot walk the environment", ec.value());
  return ok_status();
}

template <typename Visit>
Status walk_environment(const fs::path& prefix, Visit&& visit) {
  return walk_folder(prefix, prefix, detail::mount_of(prefix), visit);
}

/// The first items of `items` (printable()), comma-separated, and how many more there are.
std::string listed(const std::vector<std::string>& items, std::size_t shown) {
  std::string out;
  for (std::size_t i = 0; i < items.size() && i < shown; ++i) out += (i ? ", " : "") + printable(items[i]);
  if (items.size() > shown) out += ", and " + std::to_string(items.size() - shown) + " more";
  return out;
}

/// The marker of a new tree that is in place but whose post-link scripts have not all run:
/// `conda-meta/envlock-pending`, JSON `{"previous": [sibling names]}` naming where the previous
/// tree waits (empty: there was none). Removing it (and fsync of conda-meta/) commits the install.
constexpr const char* kPendingFile = "envlock-pending";

/// When `prefix` holds a tree marked pending, puts the previous tree back (or, when there was none,
/// moves the pending tree aside): the state before that install. `this_run`: the tree is the one
/// this process just made (a post-link script failed); otherwise an earlier run's. A first
/// install's tree holding files no package owns is undone in place (undo_first_install_in_place),
/// keeping them. The pending tree ends up under a `stage-` sibling name, for recover() or the
/// caller to delete.
Status carry_path(const fs::path& old_root, detail::Tree& stage, const std::string& rel);

/// The refusal of an update over a file or folder with the immutable or append-only flag: a copy
/// would drop the flag (a protection the admin set), and the previous tree could never be deleted.
Error immutable_refusal(const fs::path& path) {
  return Error{ErrorKind::Io, path.string(),
               "is immutable or append-only (chattr +i / +a): it cannot be carried into the updated environment, "
               "nor the previous environment deleted",
               "nothing was installed; the environment was not changed",
               "as root, run `chattr -i -a` on it, then run the command again (and set the flag again after)"};
}

nlohmann::json origin_json(const PrefixOrigin& o);

/// The rollback of a first install (no previous tree) whose tree a job wrote files into (while its
/// post-link scripts ran, or after it was killed): the files its packages own (`owned`,
/// '/'-separated, conda-meta records included) are deleted with the folders above them that are
/// left empty, conda-meta's history goes, conda-meta/envlock names no lockfile any more (the
/// prefix holds no packages: nothing takes it for up to date), and the marker goes last;
/// `unowned` stays where it is, named in `warnings`. The records go after every file they list,
/// so a kill part way leaves the marker and records naming every package file still there: the
/// next run (`this_run` false) finishes the undo, from the records left, and installs.
Status undo_first_install_in_place(const fs::path& prefix, const std::set<std::string>& owned,
                                   const std::vector<std::string>& unowned, bool this_run,
                                   std::vector<std::string>* warnings) {
  auto tree = detail::Tree::open(prefix);
  if (!tree) return tree.error();
  const std::string meta = std::string(detail::kGuardedFolder) + "/";
  std::set<std::string, std::greater<>> folders;  // deepest first
  std::vector<std::string> records;               // conda-meta/*.json: deleted last
  for (const auto& rel : owned) {
    struct stat st {};
    auto there = tree->lstat(rel, st);
    if (!there) return there.error();
    if (!*there || S_ISDIR(st.st_mode)) continue;
    if (rel.starts_with(meta)) {
      records.push_back(rel);
      continue;
    }
    if (auto st2 = tree->unlink(rel); !st2) return st2;
    for (auto at = rel.rfind('/'); at != std::string::npos && at > 0; at = rel.rfind('/', at - 1)) {
      const std::string up = rel.substr(0, at);
      if (up + "/" == meta) break;
      folders.insert(up);
    }
  }
  for (const auto& dir : folders) {
    const auto at = dir.rfind('/');
    auto parent = tree->dir(at == std::string::npos ? "" : dir.substr(0, at), false);
    if (!parent) continue;
    const std::string name = at == std::string::npos ? dir : dir.substr(at + 1);
    if (::unlinkat(*parent, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOTEMPTY && errno != EEXIST &&
        errno != ENOENT && errno != ENOTDIR)
      return io_error(prefix / dir, "cannot remove the folder", errno);
    tree->forget();
  }
  if (auto st = fsync_dir(prefix); !st) return st;  // the files are gone before their records
  for (const auto& rel : records)
    if (auto st = tree->unlink(rel); !st) return st;
  for (const char* name : {"history"}) {
    struct stat st {};
    if (auto there = tree->lstat(meta + name, st); there && *there)
      if (auto st2 = tree->unlink(meta + name); !st2) return st2;
  }
  PrefixOrigin none;
  none.prefix = prefix.string();
  if (auto st = write_file_atomic(prefix / detail::kGuardedFolder / kOriginFile, origin_json(none).dump(2) + "\n",
                                  {.mode = 0644, .follow_symlink = false});
      !st)
    return st;
  if (auto st = tree->unlink(meta + kPendingFile); !st) return st;
  if (auto st = fsync_dir(prefix / detail::kGuardedFolder); !st) return st;
  if (warnings != nullptr)
    warnings->push_back(std::string(this_run ? "rolled back a first install that did not finish"
                                             : "rolled back a first install that an earlier run left unfinished "
                                               "(conda-meta/envlock-pending)") +
                        "; kept " + std::to_string(unowned.size()) +
                        " file(s) written into it since, which no package owns: " + listed(unowned, 5) +
                        (this_run ? "; the environment stays, with no packages" : ""));
  return ok_status();
}

Status roll_back_pending(const fs::path& prefix, bool this_run, std::vector<std::string>* warnings = nullptr,
                         fs::path* discarded_tree = nullptr) {
  std::vector<std::string> carried_back;  // written into an unfinished update since: kept
  const fs::path marker = prefix / "conda-meta" / kPendingFile;
  std::error_code ec;
  if (!fs::exists(marker, ec)) return ok_status();
  auto text = detail::read_file(marker);
  if (!text) return text.error();
  const nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("previous") || !j["previous"].is_array()) {
    return Error{ErrorKind::Parse, marker.string(), "is not the marker envlock writes", "",
                 "remove the prefix and install it again"};
  }
  fs::path previous;
  for (const auto& name : j["previous"]) {
    if (!name.is_string()) continue;
    const std::string n = name.get<std::string>();
    if (n.find('/') != std::string::npos || !n.starts_with("." + prefix.filename().string() + ".envlock-")) continue;
    const fs::path candidate = prefix.parent_path() / n;
    if (fs::is_directory(fs::symlink_status(candidate, ec)) && !fs::exists(candidate / "conda-meta" / kPendingFile, ec)) {
      previous = candidate;
      break;
    }
  }
  // Both for an earlier run's tree and for this run's (a post-link script failed, or SIGINT/SIGTERM
  // arrived while they ran): a training job that wrote checkpoints into the prefix meanwhile must
  // not lose them to the rollback. conda's rollback (link.py, UnlinkLinkTransaction: each action's
  // reverse()) undoes only the paths it linked and leaves every other file in the prefix; here the
  // discarded tree's unowned, newly written files are carried into the restored one instead.
  {
    // Rolling back an earlier run's install discards the tree it left: only when that holds
    // nothing the user wrote since — no file that no package owns and that the previous tree
    // (the one restored) does not hold as the same inode (carried files are hard links). A user
    // who worked in an environment whose install was killed (new-user attacks, sessions 9 and
    // 10: results.csv and conda-meta/pinned were deleted by the next install, which said
    // "ready") or a marker written by hand must not cost their files.
    std::vector<std::string> record_warnings;
    std::set<std::string> damaged, owned;
    for (const auto& r : read_records_tolerant(prefix, record_warnings, damaged)) {
      for (const auto& f : r.files) owned.insert(f);
      owned.insert(std::string(detail::kGuardedFolder) + "/" + r.dist_name() + ".json");
    }
    auto written_since = [&](const std::string& rel) {
      struct stat here {}, there {};
      if (::lstat((prefix / rel).c_str(), &here) != 0) return false;
      return previous.empty() || ::lstat((previous / rel).c_str(), &there) != 0 || here.st_ino != there.st_ino ||
             here.st_dev != there.st_dev;
    };
    std::vector<std::string> unowned;
    auto walked = walk_environment(prefix, [&](const std::string& rel, const fs::path&, bool folder) {
      if (!folder && !owned.count(rel) && written_since(rel)) unowned.push_back(rel);
      return ok_status();
    });
    if (!walked) return walked;
    // conda-meta's own files (pinned, state: `conda env config vars`) count too; envlock's are its.
    std::error_code meta_ec;
    for (const auto& e : fs::directory_iterator(prefix / detail::kGuardedFolder, meta_ec)) {
      const std::string name = e.path().filename().string();
      const std::string rel = std::string(detail::kGuardedFolder) + "/" + name;
      if (name == kOriginFile || name == kPendingFile || name == "history" || owned.count(rel)) continue;
      if (written_since(rel)) unowned.push_back(rel);
    }
    std::sort(unowned.begin(), unowned.end());
    if (!previous.empty()) {
      carried_back = std::move(unowned);
      unowned.clear();
    }
    // A first install (no previous tree to restore them into) that a job wrote into, while its
    // post-link scripts ran or after it was killed, or whose undo was killed part way: only what
    // the install linked is undone, in place, as conda's rollback does (link.py,
    // UnlinkLinkTransaction: each action's reverse()); the prefix stays with them. A damaged
    // record of an earlier run hides which files its package owns: refused, nothing deleted.
    if (previous.empty() && !damaged.empty() && !this_run) {
      return Error{ErrorKind::Io, prefix.string(),
                   "was left by a first install that did not finish (conda-meta/envlock-pending), and has damaged "
                   "records, so the files its packages own are not known",
                   "rolling it back could delete files no package owns: envlock leaves the environment as it is",
                   "move your files out of the environment and delete it, then run the command again (or delete "
                   "conda-meta/envlock-pending to keep the environment as it is)"};
    }
    if (previous.empty() && !unowned.empty())
      return undo_first_install_in_place(prefix, owned, unowned, this_run, warnings);
    if (this_run) unowned.clear();  // nothing was written meanwhile: the whole tree goes
  }
  const fs::path aside = sibling(prefix, "stage-rollback-" + std::to_string(::getpid()));
  fs::path discarded = aside;
  if (!previous.empty() &&
      ::renameat2(AT_FDCWD, previous.c_str(), AT_FDCWD, prefix.c_str(), RENAME_EXCHANGE) == 0) {
    discarded = previous;  // `previous` now holds the discarded tree
  } else {
    // No previous tree, or no RENAME_EXCHANGE: two renames; a kill between them leaves the prefix
    // missing and the previous tree under an `old-` name, which recover() puts back.
    if (::rename(prefix.c_str(), aside.c_str()) != 0)
      return io_error(prefix, "cannot move the unfinished environment aside", errno);
    if (!previous.empty() && ::rename(previous.c_str(), prefix.c_str()) != 0)
      return io_error(prefix, "cannot restore the previous environment from " + previous.string(), errno);
  }
  if (discarded_tree != nullptr) *discarded_tree = discarded;
  // What the user wrote into the discarded tree goes into the restored one (hard links, written
  // only beneath it); a path the restored tree has already stays as it is there, named.
  if (!carried_back.empty()) {
    auto tree = detail::Tree::open(prefix);
    if (!tree) return tree.error();
    std::vector<std::string> kept, clashed;
    for (const auto& rel : carried_back) {
      struct stat st {};
      auto there = tree->lstat(rel, st);
      if (!there || *there) {
        clashed.push_back(rel);
        continue;
      }
      if (auto st2 = carry_path(discarded, *tree, rel); st2) kept.push_back(rel);
      else clashed.push_back(rel);
    }
    if (warnings != nullptr && !kept.empty())
      warnings->push_back("rolled back an update that did not finish; kept " + std::to_string(kept.size()) +
                          " file(s) written into it since, which no package owns: " + listed(kept, 5));
    if (warnings != nullptr && !clashed.empty())
      warnings->push_back("rolled back an update that did not finish; " + std::to_string(clashed.size()) +
                          " file(s) written into it could not be kept (the restored environment has them, or they "
                          "could not be linked), and are deleted with it: " + listed(clashed, 5));
  }
  return fsync_dir(prefix.parent_path());
}

/// Whether `old` (an `.<name>.envlock-old-*` sibling of the missing prefix) can be an environment
/// this user's install moved aside before it was killed between the two renames of the fallback
/// swap: a folder (not a link) owned by this user, on a filesystem without RENAME_EXCHANGE (where
/// it is, the fallback never runs). Anything else was planted beside the prefix — by whoever can
/// write its parent, or a pull request's checkout — and adopting it would make it the environment
/// root then installs into (a new-user attack, session 10); it is deleted as a leftover instead.
bool left_by_two_renames(const fs::path& old, const fs::path& prefix) {
  struct stat st {};
  if (::lstat(old.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid()) return false;
  const fs::path absent = sibling(prefix, "probe-" + std::to_string(::getpid()));
  if (::renameat2(AT_FDCWD, old.c_str(), AT_FDCWD, absent.c_str(), RENAME_EXCHANGE) == 0) {  // cannot happen: undo
    (void)::renameat2(AT_FDCWD, absent.c_str(), AT_FDCWD, old.c_str(), RENAME_EXCHANGE);
    return false;
  }
  return errno == EINVAL || errno == ENOSYS || errno == ENOTSUP;  // ENOENT: the filesystem swaps atomically
}

/// The warning for a leftover tree (beside the prefix, never the environment) that could not all
/// be deleted: the entry that stayed, why, and what to do.
std::string leftover_warning(const std::string& what, const Error& e) {
  std::string text = what + " could not all be deleted: " + e.where + ": " + e.message;
  if (!e.detail.empty()) text += " (" + e.detail + ")";
  return text + "; " + (e.hint.empty() ? "delete it by hand" : e.hint);
}

/// Whether a command names the leftovers recover() deletes (Yes: an earlier run's, found when a
/// command starts; No: this run's own discarded tree, after a rollback).
enum class NameLeftovers : bool { No, Yes };

/// Removes the leftovers of an earlier, killed run: staging trees, and an old tree moved aside by
/// the two-rename fallback (restored when the prefix itself is missing). A leftover that cannot
/// all be deleted (an immutable file in it) is a warning in `warnings`: it is beside the prefix,
/// and keeping it must not stop every later install. With NameLeftovers::Yes one warning names
/// what was deleted (attack 20, L5 and I5: a tree left beside the prefix went without a word).
/// The mount-point rule of install and remove holds here too: recovery renames the prefix and the
/// trees beside it and deletes them, which is never done to a mount point (the rename fails with
/// EBUSY half-way, and a deletion would empty the mounted filesystem): when the prefix or one of
/// those trees is a mount point, nothing is changed and the command is refused, naming it.
Status recover(const fs::path& prefix, std::vector<std::string>& warnings, NameLeftovers name = NameLeftovers::Yes) {
  std::error_code ec;
  if (is_mount_point(prefix)) return mount_point_refusal(prefix);
  const std::string stage_prefix = "." + prefix.filename().string() + ".envlock-stage-";
  const std::string old_prefix = "." + prefix.filename().string() + ".envlock-old-";
  auto list = [&](std::vector<fs::path>& stages, std::vector<fs::path>& olds) -> Status {
    for (const auto& entry : fs::directory_iterator(prefix.parent_path(), ec)) {
      const std::string entry_name = entry.path().filename().string();
      if (entry_name.starts_with(stage_prefix)) stages.push_back(entry.path());
      if (entry_name.starts_with(old_prefix)) olds.push_back(entry.path());
    }
    if (ec) return io_error(prefix.parent_path(), "cannot list", ec.value());
    std::sort(stages.begin(), stages.end());
    std::sort(olds.begin(), olds.end());
    for (const auto* trees : {&stages, &olds})
      for (const auto& p : *trees)
        if (is_mount_point(p))
          return Error{ErrorKind::Io, p.string(),
                       "is a mount point named like a tree an earlier envlock run left beside " + prefix.string(),
                       "recovering the environment renames and deletes such trees, which envlock never does to a mount "
                       "point; nothing was changed",
                       "unmount it (or rename it), then run the command again"};
    return ok_status();
  };
  {
    std::vector<fs::path> stages, olds;
    if (auto st = list(stages, olds); !st) return st;
  }
  fs::path discarded;
  if (auto st = roll_back_pending(prefix, false, &warnings, &discarded); !st) return st;
  std::vector<fs::path> stages, olds;
  if (auto st = list(stages, olds); !st) return st;
  const bool prefix_exists = fs::exists(fs::symlink_status(prefix));
  if (!prefix_exists && !olds.empty() && left_by_two_renames(olds.front(), prefix)) {
    if (::rename(olds.front().c_str(), prefix.c_str()) != 0)
      return io_error(prefix, "cannot restore the previous environment from " + olds.front().string(), errno);
    warnings.push_back("restored the environment from " + olds.front().string() +
                       ", which an install killed between its two renames left");
    olds.erase(olds.begin());
  }
  std::vector<std::string> deleted;
  for (const auto* trees : {&stages, &olds})
    for (const auto& p : *trees) {
      if (auto st = detail::remove_tree(p); !st) warnings.push_back(leftover_warning("a tree an earlier run left", st.error()));
      else if (p != discarded) deleted.push_back(p.filename().string());
    }
  if (name == NameLeftovers::Yes && !deleted.empty())
    warnings.push_back("deleted " + std::to_string(deleted.size()) + " tree(s) that an earlier envlock run left beside " +
                       prefix.string() + " (killed, or a previous environment that could not all be deleted): " +
                       listed(deleted, 5));
  return ok_status();
}

std::string python_xy(const RepoDataRecord& python) {
  const std::string& v = python.version.to_string();
  const auto first = v.find('.');
  if (first == std::string::npos) return v;
  const auto second = v.find('.', first + 1);
  return v.substr(0, second);
}

/// The archive identity used to decide that an installed package is unchanged.
bool same_package(const PrefixRecord& installed, const RepoDataRecord& wanted) {
  if (installed.dist_name() != wanted.dist_name()) return false;
  if (!installed.sha256.empty() && !wanted.sha256.empty()) return installed.sha256 == wanted.sha256;
  if (!installed.md5.empty() && !wanted.md5.empty()) return installed.md5 == wanted.md5;
  return false;
}

/// The fields, by their conda-meta key, in which the installed record of an archive and the
/// lockfile's record of the same archive (same_package()) differ: what a repodata patch, a
/// mirror or a re-lock changes without changing the archive. Empty when the prefix's record says
/// what the lockfile says. "record" stands for a difference no key below names.
std::vector<std::string> record_differences(const RepoDataRecord& installed, const RepoDataRecord& wanted) {
  std::vector<std::string> out;
  auto field = [&](bool differs, const char* key) {
    if (differs) out.emplace_back(key);
  };
  field(installed.build_number != wanted.build_number, "build_number");
  field(installed.subdir != wanted.subdir, "subdir");
  field(installed.depends != wanted.depends, "depends");
  field(installed.constrains != wanted.constrains, "constrains");
  field(installed.track_features != wanted.track_features, "track_features");
  field(installed.features != wanted.features, "features");
  field(installed.license != wanted.license, "license");
  field(installed.license_family != wanted.license_family, "license_family");
  field(installed.md5 != wanted.md5, "md5");
  field(installed.sha256 != wanted.sha256, "sha256");
  field(installed.size != wanted.size, "size");
  field(installed.timestamp != wanted.timestamp, "timestamp");
  field(installed.noarch != wanted.noarch, "noarch");
  field(installed.arch != wanted.arch, "arch");
  field(installed.platform != wanted.platform, "platform");
  field(installed.python_site_packages_path != wanted.python_site_packages_path, "python_site_packages_path");
  field(installed.url != wanted.url, "url");
  field(installed.file_name != wanted.file_name, "fn");
  field(installed.channel != wanted.channel, "channel");
  if (out.empty() && !(installed == wanted)) out.emplace_back("record");
  return out;
}

/// Where the noarch: python files of a tree go: the python record's X.Y and its site-packages
/// folder (CEP-17 python_site_packages_path, else lib/pythonX.Y/site-packages); empty without a
/// python record. set_python() places the new tree's files by the same rule.
std::pair<std::string, std::string> python_placement(const std::vector<const RepoDataRecord*>& records) {
  for (const auto* r : records) {
    if (r->name != "python") continue;
    const std::string xy = python_xy(*r);
    return {xy, r->python_site_packages_path.empty() ? "lib/python" + xy + "/site-packages" : r->python_site_packages_path};
  }
  return {};
}

/// Whether the files of `package`, installed as `installed` (the same archive), would go
/// elsewhere now: its own `noarch` changed (it decides whether site-packages/ and python-scripts/
/// move), or it is a noarch: python package and the environment's python places those files
/// elsewhere than in the tree installed (`python_moved`: another X.Y, or another
/// python_site_packages_path). Such a package is linked again, as conda (core/solve.py
/// diff_for_unlink_link_precs) and rattler (install/transaction.rs, Reinstall) relink every
/// noarch: python package when python's X.Y changes.
bool placement_changed(const PrefixRecord& installed, const RepoDataRecord& package, bool python_moved) {
  if (installed.noarch != package.noarch) return true;
  return python_moved && package.noarch == NoArchKind::Python;
}

/// Whether the python of the old tree (`old_records`) and that of the new one (`packages`) place
/// noarch: python files differently (both have python, and X.Y or site-packages differ).
bool python_placement_moved(const std::vector<PrefixRecord>& old_records, const std::vector<PackageToLink>& packages) {
  std::vector<const RepoDataRecord*> old_view, new_view;
  for (const auto& r : old_records) old_view.push_back(&r);
  for (const auto& p : packages) new_view.push_back(&p.record);
  const auto before = python_placement(old_view), after = python_placement(new_view);
  return !before.first.empty() && !after.first.empty() && before != after;
}

/// Whether installing `packages` over `old_records` rewrites a record of an archive that stays
/// (record_differences() not empty): a change of the environment, as much as a new package.
bool rewrites_a_record(const std::vector<PrefixRecord>& old_records, const std::vector<PackageToLink>& packages) {
  std::map<std::string, const PrefixRecord*> old_by_name;
  for (const auto& r : old_records) old_by_name[r.name] = &r;
  return std::any_of(packages.begin(), packages.end(), [&](const PackageToLink& p) {
    const auto it = old_by_name.find(p.record.name);
    return it != old_by_name.end() && same_package(*it->second, p.record) &&
           !record_differences(*it->second, p.record).empty();
  });
}

/// Hard-links (or re-creates, for symlinks) `rel` from the old prefix into the stage, writing only
/// beneath the stage (`stage`, a Tree: a link a new package made is never written through). A
/// folder is made (its attributes are the caller's: Tree::set_folder_attributes() and
/// Tree::keep_folder_times() once its contents are placed); FIFOs, sockets and device nodes are
/// hard-linked like files, so a reinstall keeps them as conda's in-place install does. What is
/// re-created or copied (a symbolic link; a file that cannot be linked) gets the old entry's owner
/// (as root) and times (Tree::carry_attributes()): a user's link does not come back owned by root.
Status carry_path(const fs::path& old_root, detail::Tree& stage, const std::string& rel) {
  const fs::path src = old_root / rel;
  struct stat st {};
  // A file a running job deleted between the listing and now is gone, not an error (conda's
  // path_actions.py and rattler's install/ skip what is no longer there): it is not carried.
  if (::lstat(src.c_str(), &st) != 0) return errno == ENOENT ? ok_status() : io_error(src, "cannot stat", errno);
  if (S_ISDIR(st.st_mode)) {
    auto d = stage.dir(rel, true);
    return d ? ok_status() : Status(d.error());
  }
  struct stat existing {};
  auto there = stage.lstat(rel, existing);
  if (!there) return there.error();
  if (*there) return ok_status();  // a new package owns it now
  if (S_ISLNK(st.st_mode)) {
    std::error_code ec;
    const fs::path target = fs::read_symlink(src, ec);
    if (ec) return ec.value() == ENOENT ? ok_status() : io_error(src, "cannot read symlink", ec.value());
    auto made = stage.symlink(rel, target.string());
    if (!made) return made.error();
    return *made ? stage.carry_attributes(rel, st) : ok_status();
  }
  int err = 0;
  struct stat gone {};
  auto deleted_meanwhile = [&] { return ::lstat(src.c_str(), &gone) != 0 && errno == ENOENT; };
  auto linked = stage.link_from(src, rel, err);  // the same inode: FIFOs, sockets and devices too
  if (!linked) return deleted_meanwhile() ? ok_status() : Status(linked.error());
  if (*linked) return ok_status();
  if (err == EPERM && detail::immutable_or_append_only(src)) return immutable_refusal(src);
  if (S_ISREG(st.st_mode)) {
    if (auto copied = stage.copy_new(src, rel, st.st_mode); !copied) return deleted_meanwhile() ? ok_status() : copied;
    return stage.carry_attributes(rel, st);
  }
  if (S_ISFIFO(st.st_mode)) {  // a new FIFO is the same to its users (a FIFO holds no data)
    auto made = stage.fifo(rel, st.st_mode);
    if (!made) return made.error();
    return *made ? stage.carry_attributes(rel, st) : ok_status();
  }
  return ok_status();  // a socket or device that cannot be linked (not permitted): not carried
}

/// The shell conda runs link scripts with on Linux: bash (`bash -x SCRIPT`), else sh where bash is
/// absent (conda/core/link.py run_script uses `sh` on BSD).
const char* script_shell() {
  static const char* shell = [] {
    for (const char* candidate : {"/bin/bash", "/usr/bin/bash"})
      if (::access(candidate, X_OK) == 0) return candidate;
    return "/bin/sh";
  }();
  return shell;
}

/// What a post-link script runs inside (conda runs it sourced, after activating the environment:
/// conda/utils.py wrap_subprocess_call): the environment's `etc/conda/activate.d/*.sh` hooks are
/// sourced, then the script (so a top-level `return` ends it, as in conda); the script's status is
/// the exit status. `$1` is the script; the text is fixed (nothing from a package is spliced into
/// it). conda's wrapper also sources the deactivate.d hooks afterwards; their only effect on a
/// process that ends is their side effects, and envlock leaves them out.
constexpr const char* kPostLinkWrapper =
    "for _envlock_hook in \"$PREFIX\"/etc/conda/activate.d/*.sh; do\n"
    "  [ -f \"$_envlock_hook\" ] && . \"$_envlock_hook\"\n"
    "done\n"
    "unset _envlock_hook\n"
    ". \"$1\"\n";

/// The signal that stopped the latest install_packages() or remove_environment() (from the swap
/// until the commit, or passed on to a link script; install_interrupted_by()).
int g_interrupted_by = 0;

/// Runs `bin/.<name>-<action>.sh` of `record` as conda does (conda's core/link.py run_script):
/// `bash -x SCRIPT` (sh where bash is absent) in the script's folder, with PREFIX / ROOT_PREFIX =
/// `prefix`, PKG_NAME, PKG_VERSION, PKG_BUILDNUM set and PATH starting with the script's folder
/// (`prefix/bin`); a post-link script is sourced by a fixed wrapper (kPostLinkWrapper) with
/// CONDA_PREFIX set, as conda runs it inside the activated environment. A pre-link script is the
/// package's own (`source_dir/bin/`, the extracted package; SOURCE_DIR set to it, as conda does).
/// `$PREFIX/.messages.txt` is collected into `messages` and removed. A missing script is fine.
/// A script that fails gives an ErrorKind::Io error naming the package, with its output in
/// `detail`. A SIGINT or SIGTERM to envlock while it runs is passed on to the script's process
/// group; once it has ended, the error says so and g_interrupted_by holds the signal.
Status run_script(const fs::path& prefix, const RepoDataRecord& record, const std::string& action,
                  std::vector<std::string>& messages, const fs::path& source_dir = {}) {
  const std::string rel = "bin/." + record.name + "-" + action + ".sh";
  const fs::path script = (source_dir.empty() ? prefix : source_dir) / rel;
  std::error_code ec;
  if (!fs::is_regular_file(script, ec)) return ok_status();

  std::vector<std::string> env_strings;
  const std::set<std::string> overridden = {"PREFIX", "PKG_NAME", "PKG_VERSION", "PKG_BUILDNUM",
                                            "ROOT_PREFIX", "PATH", "SOURCE_DIR", "CONDA_PREFIX"};
  std::string path_var = script.parent_path().string();
  bool had_path = false;
  for (char** e = environ; e && *e; ++e) {
    std::string kv(*e);
    const std::string key = kv.substr(0, kv.find('='));
    if (key == "PATH") path_var += ":" + kv.substr(5), had_path = true;
    if (overridden.count(key)) continue;
    env_strings.push_back(std::move(kv));
  }
  if (!had_path) path_var += ":/usr/bin:/bin";
  env_strings.push_back("PREFIX=" + prefix.string());
  env_strings.push_back("ROOT_PREFIX=" + prefix.string());
  env_strings.push_back("PKG_NAME=" + record.name);
  env_strings.push_back("PKG_VERSION=" + record.version.to_string());
  env_strings.push_back("PKG_BUILDNUM=" + std::to_string(record.build_number));
  env_strings.push_back("PATH=" + path_var);
  if (!source_dir.empty()) env_strings.push_back("SOURCE_DIR=" + source_dir.string());
  if (action == "post-link") {
    env_strings.push_back("CONDA_PREFIX=" + prefix.string());
    // conda's activation (which conda runs post-link scripts inside) also sets the environment's
    // own variables, `conda env config vars` in conda-meta/state: {"env_vars": {NAME: VALUE}}.
    if (auto text = detail::read_file(prefix / "conda-meta" / "state"); text) {
      const nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
      if (j.is_object() && j.contains("env_vars") && j["env_vars"].is_object()) {
        for (const auto& item : j["env_vars"].items()) {
          const std::string& key = item.key();  // (not a structured binding: clang 14 cannot capture one)
          const auto& value = item.value();
          const bool name_ok = !key.empty() && !std::isdigit(static_cast<unsigned char>(key[0])) &&
                               std::all_of(key.begin(), key.end(), [](char ch) {
                                 return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_';
                               });
          if (!name_ok || !value.is_string() || overridden.count(key)) continue;
          std::erase_if(env_strings, [&](const std::string& kv) { return kv.starts_with(key + "="); });
          env_strings.push_back(key + "=" + value.get<std::string>());
        }
      }
    }
  }
  SpawnOptions spawn;
  const std::string sh = script_shell();
  spawn.argv = {sh, "-x"};
  if (action == "post-link") spawn.argv.insert(spawn.argv.end(), {"-c", kPostLinkWrapper, "envlock-" + action});
  spawn.argv.push_back(script.string());
  spawn.environment = std::move(env_strings);
  spawn.working_directory = script.parent_path();
  spawn.err = ChildOutput::Merge;
  // The child gets an empty signal mask and the default dispositions of SIGINT/SIGTERM/SIGHUP,
  // whatever envlock blocks meanwhile (Ctrl-C stops a hanging script as it would stop conda's).
  spawn.signals = ChildSignals::Reset;
  // In a process group of its own: a SIGINT or SIGTERM that envlock receives meanwhile (the
  // terminal's Ctrl-C, which then reaches envlock alone, included) is passed on to the script and
  // all it started, and envlock waits for them, rolls back and exits 128 + the signal, as conda
  // and mamba wait for the script they run (attack 20 I2: a SIGTERM ended envlock at once and
  // left the script running; a Ctrl-C during pre-link exited 1).
  spawn.group = ProcessGroup::Own;
  const InterruptScope interrupts;  // the signal is the install's to act on, not the runner's
  auto interrupted = [&](const std::string& how) -> Status {
    g_interrupted_by = InterruptScope::received();
    return Error{ErrorKind::Io, record.dist_name(),
                 action + " script interrupted by " + signal_name(g_interrupted_by), "script: " + rel + "\n" + how, ""};
  };
  if (InterruptScope::received() != 0) return interrupted("it was not started");  // one that waited, blocked
  WaitOptions wait;
  wait.capture_limit = 1u << 20;
  ChildResult run = run_process(spawn, wait);
  if (run.start_error) {
    return run.start_error->step == "pipe" ? io_error(script, "cannot create a pipe", run.start_error->error_number)
                                           : io_error(script, "cannot start " + sh, run.start_error->error_number);
  }
  std::string& output = run.out;
  const fs::path msg = prefix / ".messages.txt";
  if (fs::exists(msg, ec)) {
    if (auto text = detail::read_file(msg); text && !text->empty()) messages.push_back(*text);
    fs::remove(msg, ec);
  }
  while (InterruptScope::received() != 0 && !output.empty() && output.back() == '\n') output.pop_back();
  if (InterruptScope::received() != 0)
    return interrupted("the signal was passed on to it; it " + run.ending() + "\noutput:\n" + output);
  if (!run.succeeded()) {
    while (!output.empty() && output.back() == '\n') output.pop_back();
    return Error{ErrorKind::Io, record.dist_name(), action + " script " + run.ending(),
                 "script: " + rel + "\noutput:\n" + output, ""};
  }
  return ok_status();
}

/// fsync(2) of every regular file and directory under `root` (ENVLOCK_INSTALL_SYNC=files).
Status fsync_tree(const fs::path& root) {
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    const auto type = it->symlink_status(ec).type();
    if (type != fs::file_type::regular && type != fs::file_type::directory) continue;
    const int fd = ::open(it->path().c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) return io_error(it->path(), "cannot open to fsync", errno);
    const int rc = ::fsync(fd);
    const int err = errno;
    ::close(fd);
    if (rc != 0) return io_error(it->path(), "cannot fsync", err);
  }
  if (ec) return io_error(root, "cannot walk to fsync", ec.value());
  return fsync_dir(root);
}

/// Durability before the swap (ENVLOCK_INSTALL_SYNC; docs/install.md, "Durability"). Always,
/// unless `none`: every file envlock wrote into the stage (rewritten and relocated files, copies,
/// entry points, conda-meta) is fsync'ed, from 32 threads at once so that the fsyncs share
/// journal commits, and then conda-meta/; the prefix's parent is fsync'ed after the rename. Hard links add directory
/// entries only (their data is the package cache's). `files` (default: off) adds fsync(2) of
/// every file and directory of the stage; `fs` adds syncfs(2) of the stage's filesystem and of
/// every filesystem holding a linked package-cache folder. Both cost far more (measured on the
/// warm-install benchmark), so the default is `written`.
Status sync_before_swap(const fs::path& stage, const std::vector<PackageToLink>& packages,
                        detail::WrittenFiles& written) {
  const std::string set = settings().install_sync;
  const std::string mode = set.empty() ? "written" : set;
  if (mode == "none") return ok_status();
  if (auto st = written.sync(32); !st) return st;
  if (mode == "written") return fsync_dir(stage / "conda-meta");
  if (mode == "files") return fsync_tree(stage);
  if (mode != "fs") {
    return Error{ErrorKind::Usage, "ENVLOCK_INSTALL_SYNC", "is '" + mode + "'", "",
                 "set it to written (the default), fs, files or none, or unset it"};
  }
  std::set<dev_t> done;
  auto sync_one = [&](const fs::path& path) -> Status {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return io_error(path, "cannot stat", errno);
    if (!done.insert(st.st_dev).second) return ok_status();
    const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return io_error(path, "cannot open to sync", errno);
    Status s = ok_status();
    if (::syncfs(fd) != 0) s = io_error(path, "cannot sync the filesystem", errno);
    ::close(fd);
    return s;
  };
  if (auto s = sync_one(stage); !s) return s;
  for (const auto& p : packages)
    if (auto s = sync_one(p.extracted_dir); !s) return s;
  return ok_status();
}

std::string history_line(char sign, const RepoDataRecord& r) {
  std::string channel = redact_url(r.channel);
  while (channel.ends_with('/')) channel.pop_back();
  if (!r.subdir.empty() && !channel.ends_with("/" + r.subdir)) channel += "/" + r.subdir;
  return std::string(1, sign) + channel + "::" + r.dist_name();
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

nlohmann::json origin_json(const PrefixOrigin& o) {
  nlohmann::json j{{"environment", o.environment},
                        {"envlock_version", ENVLOCK_INSTALL_VERSION},
                        {"lockfile", o.lockfile},
                        {"lockfile_hash", o.lockfile_hash},
                        {"manifest_hash", o.manifest_hash},
                        {"platform", o.platform},
                        {"prefix", o.prefix}};
  if (o.generation != 0) j["generation"] = o.generation;  // envlock/generations.hpp
  return j;
}

/// How many threads link the planned packages: 1 (one after the other) unless every plan was
/// read and no package's file or symlink is also a path, or a folder above a path, of another
/// linked or kept package — then the order of linking cannot change the result.
std::size_t link_threads(const std::vector<PackageToLink>& packages, const std::vector<const PrefixRecord*>& kept_of,
                         const std::vector<std::optional<Result<detail::LinkPlan>>>& plans, bool all_planned,
                         std::size_t wanted) {
  std::size_t to_link = 0;
  for (const auto& p : plans) to_link += p ? 1 : 0;
  const std::size_t cores = wanted != 0 ? wanted : std::max(1u, std::thread::hardware_concurrency());
  if (!all_planned || to_link < 2 || cores < 2) return 1;
  std::unordered_set<std::string_view> files, dirs;  // views of the plans' and records' strings
  auto add = [&](std::string_view path, bool file) {
    if (file && !files.insert(path).second) return false;  // two packages write one path
    if (!file) dirs.insert(path);
    for (auto slash = path.rfind('/'); slash != std::string_view::npos && slash > 0; slash = path.rfind('/', slash - 1))
      if (!dirs.insert(path.substr(0, slash)).second) break;  // its parents are in already
    return true;
  };
  for (std::size_t i = 0; i < packages.size(); ++i) {
    if (kept_of[i] != nullptr) {
      for (const auto& f : kept_of[i]->files)
        if (!add(f, true)) return 1;
    } else {
      for (const auto& [target, file] : (*plans[i])->targets)
        if (!add(target, file)) return 1;
    }
  }
  for (auto f : files)
    if (dirs.count(f) > 0) return 1;  // a file where another package needs a folder
  return std::min<std::size_t>({cores, to_link, wanted != 0 ? wanted : 8});
}

/// Links every planned package on `threads` threads, each with its own record of the stage's
/// folders; what they write is collected for fsync as on the calling thread.
void link_in_parallel(const detail::LinkContext& ctx, const std::vector<PackageToLink>& packages,
                      const std::vector<std::optional<Result<detail::LinkPlan>>>& plans, std::size_t threads,
                      std::vector<std::optional<Result<detail::LinkResult>>>& results) {
  std::atomic<std::size_t> next{0};
  auto* written = detail::WrittenFiles::current();
  auto worker = [&] {
    detail::WrittenFiles::Join join(written);
    detail::LinkContext own = ctx;
    auto tree = detail::Tree::open(ctx.stage);
    if (tree) own.tree = &*tree;
    for (std::size_t i; (i = next++) < packages.size();) {
      if (!plans[i]) continue;
      if (!tree) {
        results[i] = tree.error();
        continue;
      }
      try {
        results[i] = detail::link_planned(own, packages[i], **plans[i]);
      } catch (const std::exception& e) {  // out of memory, say: an error of this package, not a crash
        results[i] = Error{ErrorKind::Io, packages[i].record.dist_name(), std::string("cannot link: ") + e.what()};
      }
    }
  };
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
}

/// The files of `package`'s `info/prelink_messages/` (conda shows them before linking it), as
/// conda prints them: `File NAME:` and the text indented by two spaces; empty when none.
std::string prelink_messages(const PackageToLink& package) {
  const fs::path dir = package.extracted_dir / "info" / "prelink_messages";
  std::error_code ec;
  std::vector<fs::path> files;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec))
    if (it->is_regular_file(ec) && !it->is_symlink(ec)) files.push_back(it->path());
  std::sort(files.begin(), files.end());
  std::string out;
  for (const auto& f : files) {
    auto text = detail::read_file(f);
    if (!text) continue;
    out += (out.empty() ? package.record.dist_name() + ": PRELINK MESSAGES\n" : "") + "  File " +
           f.filename().string() + ":\n";
    std::size_t start = 0;
    while (start < text->size()) {
      std::size_t end = text->find('\n', start);
      if (end == std::string::npos) end = text->size();
      out += "    " + text->substr(start, end - start) + "\n";
      start = end + 1;
    }
  }
  return out;
}

/// Two records listing one path (a clobber, in the lockfile's order): the path stays only in the
/// record of `owner` (whose copy the stage holds), so `verify` checks that copy and removing the
/// other package later does not delete it (conda keeps both and loses the file: conda/conda#7775).
/// Each such path goes to report.clobbered with its owners named in report.clobbered_owners.
void disown_clobbered(std::vector<PrefixRecord>& records,
                      const std::unordered_map<std::string_view, std::size_t>& owner, InstallReport& report) {
  std::map<std::string, std::vector<std::size_t>> losers;  // path -> records that lose it, sorted by path
  for (std::size_t i = 0; i < records.size(); ++i)
    for (const auto& f : records[i].files)
      if (owner.at(f) != i) losers[f].push_back(i);
  std::vector<std::pair<std::string, std::string>> found;
  for (const auto& [path, who] : losers) {
    std::string text = records[owner.at(path)].dist_name() + " over ";
    for (std::size_t k = 0; k < who.size(); ++k) text += (k ? ", " : "") + records[who[k]].dist_name();
    found.emplace_back(path, std::move(text));
  }
  for (std::size_t i = 0; i < records.size(); ++i) {
    auto lost = [&](const std::string& f) {
      const auto it = losers.find(f);
      return it != losers.end() && std::find(it->second.begin(), it->second.end(), i) != it->second.end();
    };
    std::erase_if(records[i].files, lost);
    std::erase_if(records[i].paths, [&](const PathEntry& e) { return lost(e.path); });
  }
  for (auto& [path, text] : found) {
    report.clobbered.push_back(std::move(path));
    report.clobbered_owners.push_back(std::move(text));
  }
}

/// The new tree as the rules for unowned paths read it: what is at a path, symbolic links on the
/// way followed beneath the root (as Tree does), the last component not. In an install it is the
/// built stage (StageView); in a dry run the packages' plans (PlannedTree), so a dry run and an
/// install decide by the same code (classify_unowned(), unowned_outcome()).
class NewTree {
 public:
  virtual ~NewTree() = default;
  /// The type bits (S_IFREG, S_IFLNK, S_IFDIR, ...) of what is at `rel`; nullopt when nothing is.
  virtual Result<std::optional<mode_t>> type_at(std::string_view rel) = 0;
};

/// The stage being built, read through its Tree.
class StageView final : public NewTree {
 public:
  explicit StageView(detail::Tree& tree) : tree_(tree) {}
  Result<std::optional<mode_t>> type_at(std::string_view rel) override {
    struct stat st {};
    auto there = tree_.lstat(rel, st);
    if (!there) return there.error();
    return *there ? std::optional<mode_t>(st.st_mode & S_IFMT) : std::nullopt;
  }

 private:
  detail::Tree& tree_;
};

/// The tree the packages' plans would make, in memory: each path added in linking order (a later
/// one replacing an earlier one, as a clobber does), its folders made on the way, a symbolic link
/// on the way followed while it stays inside (a path whose way leads out or through a file is
/// left out: the install refuses or fails on it by itself).
class PlannedTree final : public NewTree {
 public:
  void add(std::string_view rel, mode_t type, const std::string& link_target) {
    const auto slash = rel.rfind('/');
    std::optional<std::string> parent =
        slash == std::string_view::npos ? std::optional<std::string>("") : resolve(rel.substr(0, slash), 0);
    if (!parent) return;
    for (std::size_t end = parent->find('/');; end = parent->find('/', end + 1)) {
      if (!parent->empty()) entries_.emplace(parent->substr(0, end), Node{S_IFDIR, {}});
      if (end == std::string::npos) break;
    }
    const std::string name(slash == std::string_view::npos ? rel : rel.substr(slash + 1));
    const std::string at = parent->empty() ? name : *parent + "/" + name;
    if (type == S_IFDIR) entries_.emplace(at, Node{S_IFDIR, {}});
    else entries_[at] = Node{type, link_target};
  }
  Result<std::optional<mode_t>> type_at(std::string_view rel) override {
    const auto slash = rel.rfind('/');
    std::optional<std::string> parent =
        slash == std::string_view::npos ? std::optional<std::string>("") : resolve(rel.substr(0, slash), 0);
    if (!parent) return std::optional<mode_t>();
    const std::string name(slash == std::string_view::npos ? rel : rel.substr(slash + 1));
    const auto it = entries_.find(parent->empty() ? name : *parent + "/" + name);
    if (it == entries_.end()) return std::optional<mode_t>();
    return std::optional<mode_t>(it->second.type);
  }

 private:
  struct Node {
    mode_t type;
    std::string target;
  };
  /// The folder `dir` names with the links on its way followed; nullopt when the way leads out,
  /// loops (40 links, as the kernel's limit) or meets a file.
  std::optional<std::string> resolve(std::string_view dir, int depth) const {
    std::string at;
    for (std::size_t start = 0; start <= dir.size();) {
      std::size_t end = dir.find('/', start);
      if (end == std::string_view::npos) end = dir.size();
      const std::string next = (at.empty() ? "" : at + "/") + std::string(dir.substr(start, end - start));
      start = end + 1;
      const auto it = entries_.find(next);
      if (it == entries_.end() || it->second.type == S_IFDIR) {
        at = next;
        continue;
      }
      if (it->second.type != S_IFLNK || depth >= 40 || it->second.target.starts_with('/')) return std::nullopt;
      const auto slash = next.rfind('/');
      const std::string joined =
          (fs::path(slash == std::string::npos ? "" : next.substr(0, slash)) / it->second.target).lexically_normal().generic_string();
      if (joined == ".." || joined.starts_with("../")) return std::nullopt;
      auto followed = joined == "." || joined.empty() ? std::optional<std::string>("") : resolve(joined, depth + 1);
      if (!followed) return std::nullopt;
      at = *followed;
      while (at.ends_with('/')) at.pop_back();
    }
    return at;
  }
  std::unordered_map<std::string, Node> entries_;
};

/// The path at or above `rel` (itself, or a folder on its way) that a package of the new tree
/// makes a file or a symbolic link (`owner`: every package path of the tree, and whose it is);
/// empty when there is none (a path a package lists as a folder does not count).
Result<std::string> package_path_at_or_above(NewTree& tree,
                                             const std::unordered_map<std::string_view, std::size_t>& owner,
                                             std::string_view rel) {
  for (std::size_t end = rel.find('/');; end = rel.find('/', end + 1)) {
    const std::string_view at = rel.substr(0, end);
    if (owner.count(at)) {
      auto type = tree.type_at(at);
      if (!type) return type.error();
      if (*type && **type != S_IFDIR) return std::string(at);
    }
    if (end == std::string_view::npos) return std::string();
  }
}

/// What the paths of the old prefix that no record owns meet in the new tree (docs/install.md,
/// the table under "Changing an existing prefix").
struct UnownedPaths {
  std::map<std::size_t, std::vector<std::string>> replaced;  ///< package -> unowned paths it replaces
  std::map<std::string, std::vector<std::string>> below;     ///< package file or link -> unowned paths below it
  std::vector<std::string> made_folders;                      ///< unowned paths that are package folders now
};

/// What becomes of a path of the old prefix: nothing (a package's, or met by one: noted in
/// UnownedPaths), a folder to make again with its attributes, or a file or link to carry over.
enum class Unowned { Leave, Folder, Carry };

/// The one rule for a path `rel` of the old prefix (`folder`: a real folder, not a link), given
/// the new tree and its package paths (`owner`) and the old records' paths (`owned`).
Result<Unowned> classify_unowned(NewTree& tree, const std::unordered_map<std::string_view, std::size_t>& owner,
                                 const std::set<std::string>& owned, const std::string& rel, bool folder,
                                 UnownedPaths& found) {
  auto at = package_path_at_or_above(tree, owner, rel);
  if (!at) return at.error();
  if (folder) return at->empty() ? Unowned::Folder : Unowned::Leave;  // else a package's file or link is there now
  if (owned.count(rel)) return Unowned::Leave;
  if (at->empty()) {
    auto type = tree.type_at(rel);
    if (!type) return type.error();
    if (!*type) return Unowned::Carry;
    // A file or link where the new packages make a folder. Anything else there is a package's
    // own path reached through a package's symbolic link (`lib -> lib64` plus `lib/x.so`
    // lists lib64/x.so as lib/x.so): not a conflict with a file of the user's.
    if (**type == S_IFDIR) found.made_folders.push_back(rel);
    return Unowned::Leave;
  }
  if (at->size() == rel.size()) found.replaced[owner.at(*at)].push_back(rel);
  else found.below[*at].push_back(rel);
  return Unowned::Leave;
}

/// The refusal (files below a folder a package makes a file or link) or the warnings (unowned
/// paths replaced; unowned paths that are package folders now) for what classify_unowned() found;
/// `names`: the dist name of each package, by the index `owner` gives.
Status unowned_outcome(UnownedPaths& found, const std::unordered_map<std::string_view, std::size_t>& owner,
                       const std::vector<std::string>& names, NewTree& tree, std::vector<std::string>& warnings) {
  std::sort(found.made_folders.begin(), found.made_folders.end());
  for (auto& [_, paths] : found.below) std::sort(paths.begin(), paths.end());
  for (auto& [_, paths] : found.replaced) std::sort(paths.begin(), paths.end());
  if (!found.below.empty()) {
    const auto& [path, files] = *found.below.begin();
    const auto type = tree.type_at(path);
    const bool link = type.ok() && *type && **type == S_IFLNK;
    std::string detail = link ? "carried over, they would be written through the link"
                              : "carried over, they would be lost";
    if (found.below.size() > 1) detail += "; " + std::to_string(found.below.size() - 1) + " more such folder(s)";
    return Error{ErrorKind::Io, names.at(owner.at(path)),
                 "makes " + path + (link ? " a symbolic link" : " a file") +
                     ", where the environment has a folder holding files no package owns: " + listed(files, 5),
                 detail + "\nnothing was installed; the environment was not changed",
                 "move those files out of " + path + "/ (or delete them), then run the command again"};
  }
  for (const auto& [package, paths] : found.replaced)
    warnings.push_back(names.at(package) + " replaced " + std::to_string(paths.size()) +
                       " path(s) no package owned (yours, or another package manager's; conda warns the same "
                       "way: UnknownPackageClobberError): " + listed(paths, 10));
  if (!found.made_folders.empty())
    warnings.push_back(std::to_string(found.made_folders.size()) +
                       " path(s) no package owned are folders of the new packages now, and were not kept: " +
                       listed(found.made_folders, 10));
  return ok_status();
}


/// Whether the new tree `tree` has a file or symbolic link at `rel` or on its way there (a folder
/// at `rel` itself counts only when `folder` is false): a path written there would replace a
/// package's, or go through its link. An error reading the tree counts as such a path.
bool package_path_in_the_way(detail::Tree& tree, std::string_view rel, bool folder) {
  for (std::size_t end = rel.find('/');; end = rel.find('/', end + 1)) {
    struct stat st {};
    auto there = tree.lstat(rel.substr(0, end), st);
    if (!there) return true;
    if (!*there) return false;  // missing from here on: made
    if (end == std::string_view::npos) return !(folder && S_ISDIR(st.st_mode));
    if (!S_ISDIR(st.st_mode)) return true;
  }
}

/// After the swap: every path of the previous tree `old_tree` that its scan before the build did
/// not see (`scanned`) and no old record owns (`owned`) was written by a running job while the
/// new tree was built. Each is carried into the environment now in place (`prefix`) by
/// carry_path()'s rules (hard links; folders keep their mode, owner and times), and named in a
/// warning; one where the new tree has a package's path (or a file or link on its way) stays in
/// the previous tree, named in another. Never fails: the new environment is in place, and an
/// error is named in a warning.
void carry_late_paths(const fs::path& old_tree, const fs::path& prefix, const std::unordered_set<std::string>& scanned,
                      const std::set<std::string>& owned, std::vector<std::string>& warnings) {
  auto tree = detail::Tree::open(prefix);
  if (!tree) {
    warnings.push_back("files written into the environment while the update was built could not be carried over: " +
                       tree.error().to_string());
    return;
  }
  std::vector<std::string> kept, left;             // the late paths, top-most ones only
  std::vector<std::string> kept_folders, left_at;  // every late folder carried; every path left
  std::vector<std::pair<std::string, struct stat>> folders;
  auto below_any = [](const std::vector<std::string>& tops, const std::string& rel) {
    return std::any_of(tops.begin(), tops.end(), [&](const std::string& t) { return rel.starts_with(t + "/"); });
  };
  auto late = [&](const std::string& rel, const fs::path& path, bool folder) -> Status {
    if (scanned.count(rel) || owned.count(rel)) return ok_status();
    if (below_any(left_at, rel)) return ok_status();  // below a late path that stays: named with it
    const bool top = !below_any(kept_folders, rel);
    if (package_path_in_the_way(*tree, rel, folder)) {
      left_at.push_back(rel);
      if (top) left.push_back(rel);
      return ok_status();
    }
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) return ok_status();  // gone again meanwhile
    if (auto carried = carry_path(old_tree, *tree, rel); !carried) {
      warnings.push_back("a file written into the environment while the update was built could not be carried over: " +
                         carried.error().to_string());
      left_at.push_back(rel);
      return ok_status();
    }
    if (folder) {
      kept_folders.push_back(rel);
      folders.emplace_back(rel, st);
    }
    if (top) kept.push_back(rel);
    return ok_status();
  };
  if (auto walked = walk_environment(old_tree, late); !walked)
    warnings.push_back("the previous environment could not all be searched for files written into it while the update "
                       "was built: " + walked.error().to_string());
  // conda-meta's own files (pinned, state), as the scan carries them; envlock's are its own.
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(old_tree / detail::kGuardedFolder, ec)) {
    const std::string name = entry.path().filename().string();
    const std::string rel = std::string(detail::kGuardedFolder) + "/" + name;
    if (name == kOriginFile || name == kPendingFile || name == "history" || !entry.is_regular_file(ec)) continue;
    if (auto st = late(rel, entry.path(), false); !st) break;
  }
  for (auto f = folders.rbegin(); f != folders.rend(); ++f) {
    Status st = tree->set_folder_attributes(f->first, old_tree / f->first, f->second.st_mode, f->second.st_uid,
                                            f->second.st_gid);
    if (st) st = tree->keep_folder_times(f->first, old_tree / f->first, f->second);
    if (!st) warnings.push_back("a folder written into the environment while the update was built did not keep its "
                                "attributes: " + st.error().to_string());
  }
  std::sort(kept.begin(), kept.end());
  std::sort(left.begin(), left.end());
  if (!kept.empty())
    warnings.push_back(std::to_string(kept.size()) + " path(s) were written into the environment while the update was "
                       "built, and were carried into the updated environment: " + listed(kept, 10));
  if (!left.empty())
    warnings.push_back(std::to_string(left.size()) + " path(s) were written into the environment while the update was "
                       "built where the updated environment has a package's path, and were deleted with the previous "
                       "environment: " + listed(left, 10));
}

/// The processes whose working folder is in `tree` (readlink of /proc/<pid>/cwd: the kernel
/// names a folder by where it is now, so the previous tree's path after the swap), as
/// (folder relative to `tree`, '/'-separated, "" for its root; pid), sorted. Processes this user
/// may not look at are not seen.
std::vector<std::pair<std::string, long>> working_folders_in(const fs::path& tree) {
  std::vector<std::pair<std::string, long>> out;
  const std::string root = tree.string();
  std::error_code ec;
  for (fs::directory_iterator it("/proc", ec), end; !ec && it != end; it.increment(ec)) {
    const std::string pid = it->path().filename().string();
    if (pid.empty() || !std::all_of(pid.begin(), pid.end(), [](char c) { return c >= '0' && c <= '9'; })) continue;
    char buf[4096];
    const ssize_t n = ::readlink((it->path() / "cwd").c_str(), buf, sizeof buf - 1);
    if (n <= 0) continue;
    const std::string cwd(buf, static_cast<std::size_t>(n));
    if (cwd == root) out.emplace_back("", std::stol(pid));
    else if (cwd.starts_with(root + "/") && !cwd.ends_with(" (deleted)"))
      out.emplace_back(cwd.substr(root.size() + 1), std::stol(pid));
  }
  std::sort(out.begin(), out.end());
  return out;
}

/// A job working in a folder of the environment (`cd $PREFIX/runs/c && python train.py`) keeps
/// that folder as its working folder through the swap: it is the previous tree's, so what it
/// writes there by relative path went to the previous tree and was deleted with it (attack 20,
/// I5: 61 of 369 files were left). conda, mamba and pixi update in place, where the folder stays
/// the environment's. Here, once the update is committed, each such folder that holds no path of
/// any package, old or new, is exchanged (renameat2 RENAME_EXCHANGE) with its copy in the new
/// tree — the job's folder is the environment's again, holding everything it wrote — and what
/// was written into the copy meanwhile is carried back into it. A working folder that cannot be
/// exchanged (the prefix root, or a folder holding package paths) is named in a warning, and the
/// previous tree is kept for what the job writes there (`keep_previous` set true).
void adopt_working_folders(const fs::path& previous_tree, const fs::path& prefix,
                           const std::vector<PrefixRecord>& old_records, std::vector<std::string>& warnings,
                           bool& keep_previous) {
  const auto working = working_folders_in(previous_tree);
  if (working.empty()) return;
  std::vector<std::string> owned;  // every package path, old and new
  for (const auto& r : old_records) owned.insert(owned.end(), r.files.begin(), r.files.end());
  std::vector<std::string> record_warnings;
  std::set<std::string> damaged;
  for (const auto& r : read_records_tolerant(prefix, record_warnings, damaged))
    owned.insert(owned.end(), r.files.begin(), r.files.end());
  auto holds_package_path = [&](const std::string& rel) {
    return std::any_of(owned.begin(), owned.end(),
                       [&](const std::string& f) { return f == rel || f.starts_with(rel + "/"); });
  };
  auto folder = [](const fs::path& p) {
    struct stat st {};
    return ::lstat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  };
  std::vector<std::string> adopted;
  for (const auto& entry : working) {
    // A named reference, not a structured binding: clang 14 (the fuzz tree) cannot capture a binding.
    const std::string& rel = entry.first;
    const bool below_adopted = std::any_of(adopted.begin(), adopted.end(), [&](const std::string& a) {
      return rel == a || rel.starts_with(a + "/");
    });
    if (below_adopted) continue;
    const bool exchangeable = !rel.empty() && rel != detail::kGuardedFolder &&
                              !rel.starts_with(std::string(detail::kGuardedFolder) + "/") &&
                              !holds_package_path(rel) && folder(previous_tree / rel) && folder(prefix / rel);
    if (exchangeable && ::renameat2(AT_FDCWD, (previous_tree / rel).c_str(), AT_FDCWD, (prefix / rel).c_str(),
                                    RENAME_EXCHANGE) == 0) {
      adopted.push_back(rel);
      // Written by path into the new tree's copy between the swap and now: carried back.
      auto tree = detail::Tree::open(prefix);
      if (!tree) continue;
      std::error_code ec;
      for (fs::recursive_directory_iterator it(previous_tree / rel, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string sub = it->path().lexically_relative(previous_tree).generic_string();
        struct stat st {};
        auto there = tree->lstat(sub, st);
        if (!there || *there) continue;
        (void)carry_path(previous_tree, *tree, sub);
        it.disable_recursion_pending();  // a folder carried brings what it holds
      }
      continue;
    }
    keep_previous = true;
    warnings.push_back("process " + std::to_string(entry.second) + " works in " + (rel.empty() ? prefix : prefix / rel).string() +
                       ", which the update replaced" +
                       (rel.empty() ? std::string() : " (a folder holding package files cannot be handed over)") +
                       ": what it writes there by relative path from now on goes to the previous environment's tree, "
                       "kept at " + previous_tree.string());
  }
}

/// The python facts every noarch: python package is placed by (`ctx.python_xy`,
/// `ctx.site_packages`), from the python record among `packages`. CEP-17's
/// python_site_packages_path steers where every noarch: python file goes: a relative, normalised
/// path inside the prefix, or the install is refused (a lockfile's "../../etc" must not be used).
Status set_python(detail::LinkContext& ctx, const std::vector<PackageToLink>& packages) {
  for (const auto& p : packages) {
    if (p.record.name != "python") continue;
    ctx.python_xy = python_xy(p.record);
    ctx.site_packages = p.record.python_site_packages_path.empty() ? "lib/python" + ctx.python_xy + "/site-packages"
                                                                   : p.record.python_site_packages_path;
    if (!detail::safe_relative_path(ctx.site_packages) || ctx.site_packages.starts_with("conda-meta")) {
      return Error{ErrorKind::Integrity, p.record.dist_name(),
                   "python_site_packages_path \"" + ctx.site_packages + "\" is not a relative path inside the prefix",
                   "nothing was installed; the prefix was not touched",
                   "fix the record's python_site_packages_path in the lockfile (e.g. lib/python3.13t/site-packages), "
                   "or lock again"};
    }
  }
  return ok_status();
}

/// The old record `package` stays as (its files carried over, not linked again): the same dist
/// name and archive hash (same_package()), every file still there, the prefix not moved, and its
/// files placed where they go now (placement_changed()). Its record-only fields may differ: the
/// record written is then the lockfile's (link_stage()).
const PrefixRecord* kept_record(const fs::path& prefix, const std::map<std::string, const PrefixRecord*>& old_by_name,
                                const PackageToLink& package, bool moved, bool python_moved) {
  const auto it = old_by_name.find(package.record.name);
  if (moved || it == old_by_name.end() || !same_package(*it->second, package.record)) return nullptr;
  if (placement_changed(*it->second, package.record, python_moved)) return nullptr;
  std::error_code ec;
  for (const auto& f : it->second->files)
    if (!detail::safe_relative_path(f) || !fs::exists(fs::symlink_status(prefix / f, ec))) return nullptr;
  return it->second;
}

/// The warning of an install into a prefix whose recorded prefix (conda-meta/envlock) is `from`.
std::string moved_warning(const std::string& from, const fs::path& prefix) {
  return "the environment was moved from " + from + " (recorded in conda-meta/envlock); every package is linked again for " +
         prefix.string();
}

/// Building a stage, step by step (plan_stage, link_stage, unlink_removed, carry_unowned,
/// write_records): the install's inputs, the stage's tree and link context, and what each step
/// leaves for the next. Nothing is written outside the stage but by scripts.
struct StageBuild {
  const fs::path& prefix;
  const std::vector<PrefixRecord>& old_records;
  const std::set<std::string>& damaged_records;
  bool has_old;
  bool moved;
  const std::vector<PackageToLink>& packages;
  const InstallOptions& options;
  /// The new tree's python places noarch: python files elsewhere than the old one's
  /// (python_placement_moved()): every noarch: python package is linked again.
  bool python_moved = false;
  detail::LinkContext ctx{};
  std::optional<detail::Tree> tree{};
  /// Per package: the old record it stays as (carried over), or the plan to link it.
  std::vector<const PrefixRecord*> kept_of{};
  /// The dist names of the packages linked again to put back a path a clobber took from them
  /// (relink_clobber_losers()): neither removed nor run pre-unlink scripts for.
  std::set<std::string> relinked{};
  std::vector<std::optional<Result<detail::LinkPlan>>> plans{};
  bool all_planned = true;
  /// Per package, the record of the new tree; the packages linked (not kept).
  std::vector<PrefixRecord> records{};
  std::vector<const PackageToLink*> linked{};
  /// Which record's copy of each path is in the stage: a linked package writes (or clobbers)
  /// every path it lists; a kept package's file is carried only where nothing is yet. The keys
  /// view the records' strings: filled once `records` is complete.
  std::unordered_map<std::string_view, std::size_t> owner{};
  InstallReport report{};
};

/// A kept package that lost a path to a clobber (disown_clobbered() left the path out of its
/// record) while the package that won it goes now (removed, or replaced by a build without that
/// path), and no other package of the new tree has the path: linked again instead of kept, so its
/// copy is put back. Carried over, the path had no owner left and was gone, and verify, reading
/// the records, said clean. rattler keeps each package's clobbered paths (install/
/// clobber_registry.rs) and, unlinking the winner, puts the next package's copy in place; envlock
/// reads what a kept package lost from its own paths.json (the paths it would link, less those
/// its record lists). Only paths the going records owned are looked at, so an update that keeps
/// every package reads nothing more.
///
/// The install has every package in the package cache; a dry run has only those already there.
/// With `undecided` (a dry run), a kept package whose fate depends on what is not in the cache
/// goes there, neither kept nor relinked: one not in the cache itself while a path the going
/// records owned is not known to be in the new tree (its paths.json would say whether it lost that
/// path), and one that lost such a path while a package to link is not in the cache (its paths
/// could hold the path, keeping the loser as it is) or after an undecided one (whose relink could
/// have put the path back).
void relink_clobber_losers(StageBuild& b, std::vector<std::size_t>* undecided = nullptr) {
  std::unordered_set<std::string> freed, had;
  for (const auto& r : b.old_records)
    if (std::find(b.kept_of.begin(), b.kept_of.end(), &r) == b.kept_of.end()) freed.insert(r.files.begin(), r.files.end());
  if (freed.empty()) return;
  bool unknown_paths = false;  // a package of the new tree whose paths are not known (not in the cache)
  for (std::size_t i = 0; i < b.packages.size(); ++i) {
    if (b.kept_of[i] != nullptr) {
      had.insert(b.kept_of[i]->files.begin(), b.kept_of[i]->files.end());
    } else if (b.plans[i] && b.plans[i]->ok()) {
      for (const auto& [path, file] : (*b.plans[i])->targets)
        if (file) had.insert(path);
    } else {
      unknown_paths = true;
    }
  }
  const bool open_path = std::any_of(freed.begin(), freed.end(), [&](const std::string& f) { return !had.count(f); });
  for (std::size_t i = 0; i < b.packages.size(); ++i) {
    if (b.kept_of[i] == nullptr) continue;
    if (b.packages[i].extracted_dir.empty()) {
      if (undecided != nullptr && open_path) {
        undecided->push_back(i);
        unknown_paths = true;
      }
      continue;
    }
    auto plan = detail::plan_package(b.ctx, b.packages[i]);
    if (!plan) continue;  // kept as it is; nothing better to do
    const std::set<std::string> listed_files(b.kept_of[i]->files.begin(), b.kept_of[i]->files.end());
    const bool lost_one = std::any_of(plan->targets.begin(), plan->targets.end(), [&](const auto& t) {
      return t.second && !listed_files.count(t.first) && freed.count(t.first) && !had.count(t.first);
    });
    if (!lost_one) continue;
    if (undecided != nullptr && unknown_paths) {
      undecided->push_back(i);
      continue;  // unknown_paths stays: whether this one's paths are in the tree is not known either
    }
    b.relinked.insert(b.kept_of[i]->dist_name());
    b.kept_of[i] = nullptr;
    b.plans[i] = std::move(plan);
    for (const auto& [path, file] : (*b.plans[i])->targets)
      if (file) had.insert(path);
  }
}

/// Plan: the stage's conda-meta/ and Tree, the python facts, which packages stay as they are
/// (their files carried over from the old prefix) and, for the others, what linking will do
/// (read from the package cache only); then conda's two steps before a package is linked
/// (conda/core/link.py): its `info/prelink_messages/` files are shown to the user (conda then
/// asks to confirm; envlock, non-interactive, shows them as messages), and its pre-link script
/// runs from the package cache (PREFIX the final prefix, SOURCE_DIR the package), a failure
/// stopping the install.
Status plan_stage(StageBuild& b, const fs::path& stage) {
  b.ctx.stage = stage;
  b.ctx.target_prefix = b.prefix.string();
  b.ctx.mode = b.options.link_mode;
  // conda-meta/ exists before any package is linked, so the Trees know it and refuse every way
  // into it but its own name (a package's `share/x -> ..` plus another's `share/x/conda-meta/…`).
  if (auto st = detail::make_dirs(stage / detail::kGuardedFolder); !st) return st;
  auto tree = detail::Tree::open(stage);
  if (!tree) return tree.error();
  b.tree.emplace(std::move(*tree));
  b.ctx.tree = &*b.tree;
  if (auto st = set_python(b.ctx, b.packages); !st) return st;
  b.python_moved = python_placement_moved(b.old_records, b.packages);

  std::map<std::string, const PrefixRecord*> old_by_name;
  for (const auto& r : b.old_records) old_by_name[r.name] = &r;
  const auto& packages = b.packages;
  b.kept_of.assign(packages.size(), nullptr);
  b.plans.resize(packages.size());
  for (std::size_t i = 0; i < packages.size(); ++i) {
    const PackageToLink& p = packages[i];
    if (b.options.progress) b.options.progress(i, packages.size(), p.record);
    if ((b.kept_of[i] = kept_record(b.prefix, old_by_name, p, b.moved, b.python_moved)) != nullptr) continue;
    b.plans[i] = detail::plan_package(b.ctx, packages[i]);
    b.all_planned = b.all_planned && b.plans[i]->ok();
  }
  relink_clobber_losers(b);
  std::error_code ec;
  for (std::size_t i = 0; i < packages.size(); ++i) {
    if (b.kept_of[i] != nullptr || !b.plans[i]->ok()) continue;
    if (auto text = prelink_messages(packages[i]); !text.empty()) b.report.messages.push_back(std::move(text));
    if (b.options.scripts != RunScripts::Yes) continue;
    const fs::path script = packages[i].extracted_dir / "bin" / ("." + packages[i].record.name + "-pre-link.sh");
    if (!fs::is_regular_file(script, ec)) continue;
    b.report.warnings.push_back(packages[i].record.dist_name() +
                                " ran a pre-link script (it can change the package cache; conda warns about these too)");
    if (auto st = run_script(b.prefix, packages[i].record, "pre-link", b.report.messages, packages[i].extracted_dir); !st) {
      Error e = st.error();
      e.hint = g_interrupted_by != 0 ? "nothing was installed; the prefix was not touched"
                                     : "nothing was installed; the prefix was not touched; fix the package or pass --no-scripts";
      return e;
    }
  }
  return ok_status();
}

/// Link: kept packages' files carried over, the others linked (in parallel when the order
/// cannot matter: every plan read, and no path — file, symlink or entry point — of one package is
/// a path, or a folder above a path, of another or of a kept package; otherwise one after the
/// other, later packages clobbering earlier ones); the records and their owners, a clobbered path
/// left only in its winner's record; and the check of the transaction as a whole: every symbolic
/// link of the new tree, whichever packages made the links it goes through, must resolve inside
/// the prefix (a link `d -> .` of one package and `d/d/e -> ../../x` of another each look
/// harmless alone).
Status link_stage(StageBuild& b) {
  const auto& packages = b.packages;
  detail::Tree& tree = *b.tree;
  std::vector<std::optional<Result<detail::LinkResult>>> linked_results(packages.size());
  const std::size_t threads = link_threads(packages, b.kept_of, b.plans, b.all_planned, b.options.link_threads);
  if (threads > 1) {
    for (std::size_t i = 0; i < packages.size(); ++i)
      if (b.kept_of[i] != nullptr)
        for (const auto& f : b.kept_of[i]->files)
          if (auto st = carry_path(b.prefix, tree, f); !st) return st;
    link_in_parallel(b.ctx, packages, b.plans, threads, linked_results);
  }
  for (std::size_t i = 0; i < packages.size(); ++i) {
    const PackageToLink& p = packages[i];
    if (b.kept_of[i] != nullptr) {
      if (threads <= 1)
        for (const auto& f : b.kept_of[i]->files)
          if (auto st = carry_path(b.prefix, tree, f); !st) return st;
      PrefixRecord kept = *b.kept_of[i];
      kept.requested_spec = p.requested_spec;
      // The same archive, its files carried over as they are; what the record says of it is the
      // lockfile's (a repodata patch's depends, another channel's url): the prefix says what the
      // lockfile says, and the files (paths_data, the cache folder they came from) stay.
      if (!record_differences(kept, p.record).empty()) {
        static_cast<RepoDataRecord&>(kept) = p.record;
        b.report.rewritten.push_back(p.record.dist_name());
      }
      b.records.push_back(std::move(kept));
      b.report.kept.push_back(p.record.dist_name());
      continue;
    }
    if (!b.plans[i]->ok()) return b.plans[i]->error();
    if (!linked_results[i]) linked_results[i] = detail::link_planned(b.ctx, p, **b.plans[i]);
    auto& result = *linked_results[i];
    if (!result) {  // named by the package being linked, where the error names only a path
      const std::string dist = p.record.dist_name();
      return result.error().where.find(dist) == std::string::npos ? result.error().with_context(dist) : result.error();
    }
    b.report.files_linked += result->linked;
    b.report.files_copied += result->copied;
    b.report.files_relocated += result->relocated;
    b.records.push_back(std::move(result->record));
    b.report.installed.push_back(p.record.dist_name());
    b.linked.push_back(&p);
  }
  for (std::size_t i = 0; i < b.records.size(); ++i) {
    const bool was_kept = b.kept_of[i] != nullptr;
    for (const auto& f : b.records[i].files) {
      if (was_kept) b.owner.emplace(f, i);
      else b.owner[f] = i;
    }
  }
  disown_clobbered(b.records, b.owner, b.report);
  for (const auto& r : b.records)
    for (const auto& path : r.paths)
      if (path.type == PathEntry::Type::SoftLink && tree.link_leaves(path.path)) {
        return Error{ErrorKind::Integrity, r.dist_name(),
                     "symbolic link " + path.path + " resolves outside the prefix (through the links of the packages "
                     "installed together)",
                     "nothing was installed; the prefix was not touched",
                     "refusing an environment whose links lead out of it; remove the packages that make them from the "
                     "lockfile"};
      }
  return ok_status();
}

/// The old records that go (removed, or replaced by another build of the same name) into
/// report.removed; then their pre-unlink scripts, in the live prefix before their files go, as
/// conda runs them (conda only warns when one fails). They run before the unowned files are
/// carried over, so what they delete stays deleted. A signal passed on to one stops the install.
Status unlink_removed(StageBuild& b) {
  std::set<std::string> new_names;
  for (const auto& p : b.packages) new_names.insert(p.record.name);
  for (const auto& r : b.old_records)
    if (!new_names.count(r.name)) b.report.removed.push_back(r.dist_name());
  for (const auto& r : b.old_records)
    if (new_names.count(r.name) &&
        std::find(b.report.kept.begin(), b.report.kept.end(), r.dist_name()) == b.report.kept.end() &&
        !b.relinked.count(r.dist_name()) &&
        !std::any_of(b.packages.begin(), b.packages.end(), [&](const PackageToLink& p) {
          // The same archive linked again where its files go now (a moved prefix, another
          // placement of noarch: python files): a reinstall, not a removal.
          return same_package(r, p.record) && (b.moved || placement_changed(r, p.record, b.python_moved));
        }))
      b.report.removed.push_back(r.dist_name());
  if (!b.has_old || b.options.scripts != RunScripts::Yes) return ok_status();
  for (const auto& r : b.old_records) {
    if (std::find(b.report.removed.begin(), b.report.removed.end(), r.dist_name()) == b.report.removed.end()) continue;
    auto st = run_script(b.prefix, r, "pre-unlink", b.report.messages);
    if (!st && g_interrupted_by != 0) {
      Error e = st.error();
      e.hint = "the environment was not updated (only what the script did itself is done)";
      return e;
    }
    if (!st)
      b.report.warnings.push_back(st.error().where + ": " + st.error().message + " (ignored, as conda does)\n" +
                                  st.error().detail);
  }
  return ok_status();
}

/// Carry over: files in the old prefix that no record owns (pip installs, user files) stay; so
/// do the folders' modes, owners and times, and empty folders (conda changes a prefix in place,
/// where both stay). A folder that held only files of packages that go is not made again. Where a
/// package now puts a path, the old one meets it (classify_unowned(), unowned_outcome()): a file
/// no package owned is replaced, with a warning (conda's UnknownPackageClobberError, a warning
/// under its default `path_conflict: clobber`); files below a folder a package makes a file or a
/// symbolic link are refused (carried over, they would be lost, or written through the link).
/// Every path seen goes into `scanned`.
Status carry_unowned(StageBuild& b, std::unordered_set<std::string>& scanned) {
  if (!b.has_old) return ok_status();
  const fs::path& prefix = b.prefix;
  detail::Tree& tree = *b.tree;
  std::set<std::string> owned;
  for (const auto& r : b.old_records)
    for (const auto& f : r.files) owned.insert(f);
  std::vector<std::pair<std::string, struct stat>> folders{{"", {}}};
  if (::lstat(prefix.c_str(), &folders.front().second) != 0) return io_error(prefix, "cannot stat", errno);
  for (const fs::path& flagged : {prefix, prefix / detail::kGuardedFolder, prefix / detail::kGuardedFolder / "history"})
    if (detail::immutable_or_append_only(flagged)) return immutable_refusal(flagged);
  StageView view(tree);
  UnownedPaths unowned;
  auto walked = walk_environment(prefix, [&](const std::string& rel, const fs::path& path, bool folder) -> Status {
    scanned.insert(rel);
    auto what = classify_unowned(view, b.owner, owned, rel, folder, unowned);
    if (!what) return what.error();
    if (*what == Unowned::Carry) return carry_path(prefix, tree, rel);
    if (*what == Unowned::Folder) {
      if (detail::immutable_or_append_only(path)) return immutable_refusal(path);
      struct stat st {};
      if (::lstat(path.c_str(), &st) != 0) return errno == ENOENT ? ok_status() : io_error(path, "cannot stat", errno);
      std::error_code empty_ec;
      if (fs::is_empty(path, empty_ec))
        if (auto made = tree.dir(rel, true); !made) return made.error();
      folders.emplace_back(rel, st);
    }
    return ok_status();
  });
  if (!walked) return walked;
  std::vector<std::string> names;
  for (const auto& r : b.records) names.push_back(r.dist_name());
  if (auto st = unowned_outcome(unowned, b.owner, names, view, b.report.warnings); !st) return st;
  // Deepest first, so a folder made read-only does not stop the ones below it.
  for (auto f = folders.rbegin(); f != folders.rend(); ++f) {
    struct stat there {};
    auto found = f->first.empty() ? Result<bool>(true) : tree.lstat(f->first, there);
    if (!found) return found.error();
    if (!*found) continue;
    if (auto st = tree.set_folder_attributes(f->first, prefix / f->first, f->second.st_mode, f->second.st_uid,
                                             f->second.st_gid);
        !st)
      return st;
    if (auto st = tree.keep_folder_times(f->first, prefix / f->first, f->second); !st) return st;
  }
  return ok_status();
}

/// Record: conda-meta's records, history and origin; the other files conda-meta held (pinned,
/// ...) carried over (each name seen goes into `scanned`); the linked packages with a post-link
/// script into `post_link`; the report's lists sorted.
Status write_records(StageBuild& b, std::vector<const PackageToLink*>& post_link,
                     std::unordered_set<std::string>& scanned) {
  const fs::path& prefix = b.prefix;
  detail::Tree& tree = *b.tree;
  const InstallOptions& options = b.options;
  std::error_code ec;
  if (auto st = tree.dir("conda-meta", true); !st) return st.error();
  std::set<std::string> old_record_files;
  for (const auto& r : b.old_records) old_record_files.insert(r.dist_name() + ".json");
  std::string history;
  if (b.has_old) {
    for (const auto& entry : fs::directory_iterator(prefix / "conda-meta", ec)) {
      const std::string name = entry.path().filename().string();
      scanned.insert("conda-meta/" + name);
      if (name == "history") {
        if (auto text = detail::read_file(entry.path()); text) history = *text;
        continue;
      }
      if (name == kOriginFile || old_record_files.count(name) || b.damaged_records.count(name) ||
          !entry.is_regular_file())
        continue;
      if (auto st = carry_path(prefix, tree, "conda-meta/" + name); !st) return st;
    }
  }
  for (const auto& r : b.records) {
    nlohmann::json j;
    r.to_json(j);
    if (auto st = tree.write_new("conda-meta/" + r.dist_name() + ".json", j.dump(2) + "\n", 0644); !st) return st;
  }
  if (!history.empty() && !history.ends_with('\n')) history += '\n';
  history += "==> " + utc_now() + " <==\n";
  // The command line escaped (printable(): `\n`, `\x1b`): a newline in a file name would start a
  // line that conda's History parser reads as a package of the revision (attack 23 F12).
  std::string cmd = "envlock " + options.origin.command;
  if (!options.origin.manifest.empty()) cmd += " -f " + options.origin.manifest;
  else if (!options.origin.lockfile.empty())  // `snapshot deploy` names its file as an argument
    cmd += (options.origin.command.starts_with("snapshot ") ? " " : " -l ") + options.origin.lockfile;
  if (!options.origin.environment.empty()) cmd += " -e " + options.origin.environment;
  history += "# cmd: " + printable(cmd);
  history += "\n# envlock version: " + std::string(ENVLOCK_INSTALL_VERSION) + "\n";
  std::vector<std::string> lines;
  for (const auto& r : b.old_records)
    if (std::find(b.report.removed.begin(), b.report.removed.end(), r.dist_name()) != b.report.removed.end())
      lines.push_back(history_line('-', r));
  for (const auto* p : b.linked) lines.push_back(history_line('+', p->record));
  std::sort(lines.begin(), lines.end());
  for (const auto& l : lines) history += l + "\n";
  if (auto st = tree.write_new("conda-meta/history", history, 0644); !st) return st;
  if (auto st = tree.write_new(std::string("conda-meta/") + kOriginFile, origin_json(options.origin).dump(2) + "\n", 0644);
      !st)
    return st;

  if (options.scripts == RunScripts::Yes) {
    for (const auto* p : b.linked)
      if (fs::exists(b.ctx.stage / "bin" / ("." + p->record.name + "-post-link.sh"), ec)) post_link.push_back(p);
  }
  std::sort(b.report.installed.begin(), b.report.installed.end());
  std::sort(b.report.removed.begin(), b.report.removed.end());
  std::sort(b.report.kept.begin(), b.report.kept.end());
  std::sort(b.report.rewritten.begin(), b.report.rewritten.end());
  return ok_status();
}

/// Makes the stage hold everything (plan, link, pre-unlink, carry over, record); returns the
/// report. The prefix is not touched but by pre-link and pre-unlink scripts.
Result<InstallReport> build_stage(const fs::path& prefix, const fs::path& stage,
                                  const std::vector<PrefixRecord>& old_records,
                                  const std::set<std::string>& damaged_records, bool has_old, bool moved,
                                  const std::vector<PackageToLink>& packages,
                                  const InstallOptions& options,
                                  std::vector<const PackageToLink*>& post_link,
                                  std::unordered_set<std::string>& scanned) {
  StageBuild b{prefix, old_records, damaged_records, has_old, moved, packages, options};
  if (auto st = plan_stage(b, stage); !st) return st.error();
  if (auto st = link_stage(b); !st) return st.error();
  if (auto st = unlink_removed(b); !st) return st.error();
  if (auto st = carry_unowned(b, scanned); !st) return st.error();
  if (auto st = write_records(b, post_link, scanned); !st) return st.error();
  return std::move(b.report);
}

}  // namespace

Status check_install_prefix(const fs::path& prefix_in, ForeignPrefix foreign) {
  auto prefix = checked_prefix(prefix_in);
  if (!prefix) return prefix.error();
  return check_install_target(*prefix, foreign);
}

TransactionPlan plan_transaction(const fs::path& prefix_in, const std::vector<RepoDataRecord>& records) {
  TransactionPlan plan;
  const fs::path prefix = normalized_prefix(prefix_in);
  std::set<std::string> damaged;
  std::error_code ec;
  std::vector<PrefixRecord> old;
  if (fs::is_directory(prefix / "conda-meta", ec)) old = read_records_tolerant(prefix, plan.warnings, damaged);
  std::map<std::string, const PrefixRecord*> old_by_name;
  for (const auto& r : old) old_by_name[r.name] = &r;
  std::set<std::string> names;
  for (const auto& r : records) {
    names.insert(r.name);
    const auto it = old_by_name.find(r.name);
    if (it == old_by_name.end()) plan.added.push_back(r.dist_name());
    else if (same_package(*it->second, r)) plan.unchanged.push_back(r.dist_name());
    else plan.changed.emplace_back(it->second->dist_name(), r.dist_name());
  }
  for (const auto& r : old)
    if (!names.count(r.name)) plan.removed.push_back(r.dist_name());
  std::sort(plan.added.begin(), plan.added.end());
  std::sort(plan.removed.begin(), plan.removed.end());
  std::sort(plan.changed.begin(), plan.changed.end());
  std::sort(plan.unchanged.begin(), plan.unchanged.end());
  return plan;
}

Result<InstallPreview> preview_install(const fs::path& prefix_in, const std::vector<PackageToLink>& packages) {
  InstallPreview out;
  auto checked = checked_prefix(prefix_in);
  if (!checked) return checked.error();
  const fs::path prefix = *checked;
  std::error_code ec;
  if (!fs::is_directory(fs::symlink_status(prefix, ec)) || !fs::is_directory(prefix / detail::kGuardedFolder, ec))
    return out;  // a new environment: no path of it meets a package's
  std::vector<std::string> damaged_warnings;  // plan_transaction() names them
  std::set<std::string> damaged;
  const std::vector<PrefixRecord> old_records = read_records_tolerant(prefix, damaged_warnings, damaged);
  bool moved = false;
  if (auto o = read_prefix_origin(prefix); o && *o && !(*o)->prefix.empty() && (*o)->prefix != prefix.string()) {
    moved = true;
    out.warnings.push_back(moved_warning((*o)->prefix, prefix));
  }
  // Which packages stay as they are and which are linked, as plan_stage() decides it: the same
  // StageBuild steps, over the packages' plans instead of a stage.
  const InstallOptions no_options;
  StageBuild b{prefix, old_records, damaged, true, moved, packages, no_options};
  detail::LinkContext& ctx = b.ctx;
  ctx.target_prefix = prefix.string();
  if (auto st = set_python(ctx, packages); !st) return st.error();
  b.python_moved = python_placement_moved(old_records, packages);
  std::map<std::string, const PrefixRecord*> old_by_name;
  for (const auto& r : old_records) old_by_name[r.name] = &r;
  b.kept_of.assign(packages.size(), nullptr);
  b.plans.resize(packages.size());
  for (std::size_t i = 0; i < packages.size(); ++i) {
    if ((b.kept_of[i] = kept_record(prefix, old_by_name, packages[i], moved, b.python_moved)) != nullptr) continue;
    if (packages[i].extracted_dir.empty()) continue;
    b.plans[i] = detail::plan_package(ctx, packages[i]);
    if (!b.plans[i]->ok()) return b.plans[i]->error();
  }
  std::vector<std::size_t> undecided;
  relink_clobber_losers(b, &undecided);
  for (const std::size_t i : undecided) out.undecided.push_back(packages[i].record.dist_name());
  std::sort(out.undecided.begin(), out.undecided.end());
  // What plan_transaction() calls unchanged (the same dist name and archive hash) and the install
  // links again: a clobber's loser whose winner goes, one whose files are not all there, one whose
  // files go elsewhere now (its noarch, or python's placement of noarch: python files, changed),
  // every package of a moved prefix. Of those kept, the ones whose record the install rewrites.
  for (std::size_t i = 0; i < packages.size(); ++i) {
    const auto it = old_by_name.find(packages[i].record.name);
    if (it == old_by_name.end() || !same_package(*it->second, packages[i].record)) continue;
    if (std::find(undecided.begin(), undecided.end(), i) != undecided.end()) continue;
    if (b.kept_of[i] == nullptr) {
      out.relinked.push_back(packages[i].record.dist_name());
    } else if (auto fields = record_differences(*b.kept_of[i], packages[i].record); !fields.empty()) {
      out.rewritten.push_back({packages[i].record.dist_name(), std::move(fields)});
    }
  }
  std::sort(out.relinked.begin(), out.relinked.end());
  std::sort(out.rewritten.begin(), out.rewritten.end(),
            [](const RecordRewrite& x, const RecordRewrite& y) { return x.dist < y.dist; });
  // The new tree as linking would make it, package after package (kept ones from the prefix).
  PlannedTree tree;
  std::vector<std::string> names;
  std::vector<std::vector<std::string>> paths(packages.size());  // each package's, as its record lists them
  std::vector<bool> kept(packages.size(), false);
  auto link_at = [](const fs::path& p) {
    std::error_code lec;
    const fs::path target = fs::read_symlink(p, lec);
    return lec ? std::string() : target.string();
  };
  for (std::size_t i = 0; i < packages.size(); ++i) {
    const PackageToLink& p = packages[i];
    names.push_back(p.record.dist_name());
    if (const PrefixRecord* k = b.kept_of[i]) {
      kept[i] = true;
      for (const auto& f : k->files) {
        struct stat st {};
        if (::lstat((prefix / f).c_str(), &st) != 0) continue;
        tree.add(f, st.st_mode & S_IFMT, S_ISLNK(st.st_mode) ? link_at(prefix / f) : std::string());
        paths[i].push_back(f);
      }
      continue;
    }
    if (!b.plans[i]) {
      out.unchecked.push_back(names.back());
      continue;
    }
    const auto& plan = *b.plans[i];
    for (std::size_t k = 0; k < plan->targets.size(); ++k) {
      const auto& [target, file] = plan->targets[k];
      paths[i].push_back(target);
      if (!file) {
        tree.add(target, S_IFDIR, "");
        continue;
      }
      std::string link = k < plan->link_targets.size() ? plan->link_targets[k] : std::string();
      if (link.empty() && k < plan->entries.size()) {  // a file in paths.json that is a link in the cache folder
        struct stat st {};
        const fs::path src = p.extracted_dir / plan->entries[k].path;
        if (::lstat(src.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) link = link_at(src);
      }
      tree.add(target, link.empty() ? S_IFREG : S_IFLNK, link);
    }
  }
  std::set<std::string> owned;
  for (const auto& r : old_records) owned.insert(r.files.begin(), r.files.end());
  std::sort(out.unchecked.begin(), out.unchecked.end());
  if (!out.unchecked.empty()) {
    // Not every path of the new tree is known, so nothing is compared; that hides something only
    // when the prefix holds a file or link no record owns.
    bool unowned_path = false;
    auto walked = walk_environment(prefix, [&](const std::string& rel, const fs::path&, bool folder) -> Status {
      unowned_path = unowned_path || (!folder && !owned.count(rel));
      return ok_status();
    });
    if (!walked) return walked.error();
    if (!unowned_path) out.unchecked.clear();
    return out;
  }
  std::unordered_map<std::string_view, std::size_t> owner;  // as build_stage() fills it
  for (std::size_t i = 0; i < paths.size(); ++i)
    for (const auto& f : paths[i]) {
      if (kept[i]) owner.emplace(f, i);
      else owner[f] = i;
    }
  UnownedPaths found;
  auto walked = walk_environment(prefix, [&](const std::string& rel, const fs::path&, bool folder) -> Status {
    auto what = classify_unowned(tree, owner, owned, rel, folder, found);
    return what ? ok_status() : Status(what.error());
  });
  if (!walked) return walked.error();
  if (auto st = unowned_outcome(found, owner, names, tree, out.warnings); !st) return st.error();
  return out;
}

Result<std::optional<fs::path>> interrupted_install(const fs::path& prefix_in) {
  if (auto st = nonempty_prefix(prefix_in); !st) return st.error();
  // Read-only commands follow a link to an environment; the marker names siblings of the real one.
  std::error_code ec;
  fs::path real = fs::canonical(prefix_in, ec);
  if (ec) real = normalized_prefix(prefix_in);
  const std::optional<fs::path> prefix(real);
  const fs::path marker = *prefix / "conda-meta" / kPendingFile;
  if (!fs::exists(marker, ec)) return std::optional<fs::path>{};
  // A marker under a lock another process holds is an install running now, not an interrupted one.
  if (const int fd = ::open(sibling(*prefix, "lock").c_str(), O_RDONLY | O_CLOEXEC); fd >= 0) {
    const bool busy = ::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    ::close(fd);
    if (busy) {
      return Error{ErrorKind::Io, prefix->string(), "an install into this prefix is running right now", "",
                   "wait for it to finish and run the command again"};
    }
  }
  auto text = detail::read_file(marker);
  if (!text) return text.error();
  const nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
  if (j.is_object() && j.contains("previous") && j["previous"].is_array()) {
    for (const auto& name : j["previous"]) {
      if (!name.is_string()) continue;
      const fs::path candidate = prefix->parent_path() / name.get<std::string>();
      if (name.get<std::string>().find('/') == std::string::npos && fs::is_directory(fs::symlink_status(candidate, ec)))
        return std::optional<fs::path>(candidate);
    }
  }
  return std::optional<fs::path>(fs::path());
}

namespace {
/// Blocks SIGINT, SIGTERM and SIGHUP for its lifetime (from the swap until the transaction is
/// committed or rolled back), so that Ctrl-C cannot leave the new, unfinished tree in place;
/// pending() says whether one arrived meanwhile (and takes it, so that it is not delivered).
class BlockedSignals {
 public:
  BlockedSignals() {
    sigemptyset(&set_);
    sigaddset(&set_, SIGINT);
    sigaddset(&set_, SIGTERM);
    sigaddset(&set_, SIGHUP);
    ::pthread_sigmask(SIG_BLOCK, &set_, &old_);
  }
  ~BlockedSignals() { ::pthread_sigmask(SIG_SETMASK, &old_, nullptr); }
  BlockedSignals(const BlockedSignals&) = delete;
  BlockedSignals& operator=(const BlockedSignals&) = delete;
  int pending() {
    const timespec zero{0, 0};
    const int sig = ::sigtimedwait(&set_, nullptr, &zero);
    return sig > 0 ? sig : 0;
  }

 private:
  sigset_t set_{}, old_{};
};

/// The package's own name/version/build (info/index.json) against its lockfile record: a record
/// edited by hand (version 9.9.9 over an archive of 1.0.0) must not install under a false name.
Status check_index_json(const PackageToLink& p) {
  const fs::path index = p.extracted_dir / "info" / "index.json";
  auto text = detail::read_file(index);
  if (!text) return text.error();
  const nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return Error{ErrorKind::Integrity, index.string(), "is not a JSON object", "package: " + p.record.dist_name(),
                 "remove the package from the package cache and retry"};
  }
  auto field = [&](const char* key) {
    const auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  const std::string name = field("name"), version = field("version"), build = field("build");
  if (name == p.record.name && version == p.record.version.to_string() && build == p.record.build) return ok_status();
  return Error{ErrorKind::Integrity, p.record.file_name.empty() ? p.record.dist_name() : p.record.file_name,
               "the lockfile's record says " + p.record.name + " " + p.record.version.to_string() + " " +
                   p.record.build + " but the package itself (info/index.json) is " + name + " " + version + " " +
                   build,
               "nothing was installed; the prefix was not touched",
               "the lockfile was edited or its channel changed; run `envlock lock` again"};
}
}  // namespace

int install_interrupted_by() { return g_interrupted_by; }

namespace {
Result<InstallReport> install_locked(const fs::path& prefix, const std::vector<PackageToLink>& packages,
                                     const InstallOptions& options);
}  // namespace

/// The locks of the environments nested in `prefix`'s `envs/` (conda's layout for a base
/// environment), taken after the prefix's own: an update of the base rebuilds the whole tree,
/// nested environments included (carried over by hard link), so it waits for an install in
/// progress there to finish, and an install there waits for the base's swap (attack 20, I0: both
/// exited 0 and the nested environment was left empty or mixed). A nested environment is a folder
/// `envs/<name>` with `conda-meta/`, or one whose lock file `envs/.<name>.envlock-lock` exists (a
/// first install under way). Taken in name order; an install of a nested environment never takes
/// the base's lock, so the two cannot wait on each other.
Result<std::vector<PrefixLock>> lock_nested_environments(const fs::path& prefix, const LockWait& on_wait) {
  std::set<std::string> names;
  std::error_code ec;
  const fs::path envs = prefix / "envs";
  if (!fs::is_directory(fs::symlink_status(envs, ec))) return std::vector<PrefixLock>{};
  for (fs::directory_iterator it(envs, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    std::error_code sec;
    if (name.starts_with(".") && name.ends_with(".envlock-lock") && name.size() > 14) {
      names.insert(name.substr(1, name.size() - 1 - std::string_view(".envlock-lock").size()));
    } else if (!name.starts_with(".") && fs::is_directory(fs::symlink_status(it->path(), sec)) &&
               fs::is_directory(fs::symlink_status(it->path() / "conda-meta", sec))) {
      names.insert(name);
    }
  }
  std::vector<PrefixLock> locks;
  for (const auto& name : names) {
    auto lock = PrefixLock::acquire(envs / name, on_wait);
    if (!lock) return lock.error();
    locks.push_back(std::move(*lock));
  }
  return locks;
}

Result<InstallReport> install_packages(const fs::path& prefix_in, const std::vector<PackageToLink>& packages,
                                       const InstallOptions& options) {
  g_interrupted_by = 0;
  auto checked = checked_prefix(prefix_in);
  if (!checked) return checked.error();
  const fs::path prefix = *checked;
  for (const auto& p : packages)
    if (auto st = check_index_json(p); !st) return st.error();
  // Validate before taking the lock: a refusal writes nothing (no lock file either).
  if (auto st = check_install_target(prefix, options.foreign); !st) return st.error();
  std::vector<fs::path> made_parents;  // the folders above the prefix this run creates, deepest first
  for (fs::path up = prefix.parent_path(); !up.empty() && up != up.root_path() && !fs::exists(fs::symlink_status(up));
       up = up.parent_path())
    made_parents.push_back(up);
  if (auto st = detail::make_dirs(prefix.parent_path()); !st) return st.error();
  auto lock = PrefixLock::acquire(prefix, options.on_lock_wait);
  if (!lock) return lock.error();
  auto nested = lock_nested_environments(prefix, options.on_lock_wait);
  if (!nested) return nested.error();
  auto result = install_locked(prefix, packages, options);
  // A new environment that was not made leaves nothing behind: neither its lock file (unlinked
  // while held: a waiting process sees another file and starts again) nor the folders made for it.
  // A prefix that is there but holds no environment (an empty folder, a mount point) counts as
  // not made: a lock file beside it would be stale.
  std::error_code ec;
  if (!result && (!fs::exists(fs::symlink_status(prefix, ec)) ||
                  !fs::exists(fs::symlink_status(prefix / "conda-meta", ec)))) {
    fs::remove(sibling(prefix, "lock"), ec);
    for (const auto& dir : made_parents)
      if (::rmdir(dir.c_str()) != 0) break;  // not empty: something else is there now
  }
  return result;
}

namespace {
/// install_packages() once the prefix is checked and its lock is held.
Result<InstallReport> install_locked(const fs::path& prefix, const std::vector<PackageToLink>& packages,
                                     const InstallOptions& options) {
  std::vector<std::string> damaged_warnings;  // warnings about the environment as found, shown first
  detail::adopt_kept_tree(prefix, &damaged_warnings);  // what a killed run left of generations (generations.cpp)
  if (auto st = recover(prefix, damaged_warnings); !st) return st.error();

  std::error_code ec;
  const auto status = fs::symlink_status(prefix, ec);
  bool has_old = false;
  std::vector<PrefixRecord> old_records;
  std::set<std::string> damaged_records;
  if (fs::exists(status)) {
    if (!fs::is_directory(status)) {
      return Error{ErrorKind::Io, prefix.string(), "exists and is not a directory", "",
                   "choose another prefix, or remove that file"};
    }
    const bool empty = fs::is_empty(prefix, ec);
    if (!empty) {
      if (!fs::is_directory(prefix / "conda-meta", ec)) {
        return Error{ErrorKind::Io, prefix.string(),
                     "is a non-empty folder that is not an environment (it has no conda-meta/)", "",
                     "choose a new or empty folder as the prefix"};
      }
      old_records = read_records_tolerant(prefix, damaged_warnings, damaged_records);
    }
    has_old = !empty;
  }
  // Generations (src/install/generations.cpp): the number of the tree made, and whether the one
  // it replaces is kept.
  detail::GenerationPlan generation;
  if (options.keep_generations == KeepGenerations::Yes) {
    // A record rewritten (the same archive, other record fields) changes the environment too: the
    // tree it replaces is kept, so a rollback brings the old record back.
    auto planned = detail::plan_generation(prefix, has_old, old_records, packages,
                                           options.stage_differs || rewrites_a_record(old_records, packages));
    if (!planned) return planned.error();
    generation = *planned;
  }

  auto made = make_stage_folder(prefix);
  if (!made) return made.error();
  const fs::path stage = std::move(*made);

  std::vector<const PackageToLink*> post_link;
  detail::WrittenFiles written;
  // The prefix written into the files is recorded (conda-meta/envlock "prefix"); a prefix whose
  // recorded one differs was moved: its files hold the old path, so every package is relinked
  // (relocated to the prefix really there) instead of carried over.
  InstallOptions opts = options;
  opts.origin.generation = generation.number;
  opts.origin.prefix = prefix.string();
  bool moved = false;
  if (has_old) {
    if (auto o = read_prefix_origin(prefix); o && *o && !(*o)->prefix.empty() && (*o)->prefix != prefix.string()) {
      moved = true;
      damaged_warnings.push_back(moved_warning((*o)->prefix, prefix));
    }
  }
  std::unordered_set<std::string> scanned;  // every path of the old tree its scan saw
  auto report =
      build_stage(prefix, stage, old_records, damaged_records, has_old, moved, packages, opts, post_link, scanned);
  if (!report) {
    (void)detail::remove_tree(stage);
    // The stage is gone: a path in it is named as the path it was to have in the environment.
    Error e = report.error();
    for (std::string* text : {&e.where, &e.message, &e.detail})
      for (std::size_t at; (at = text->find(stage.string())) != std::string::npos;)
        text->replace(at, stage.string().size(), prefix.string());
    return e;
  }
  report->warnings.insert(report->warnings.begin(), damaged_warnings.begin(), damaged_warnings.end());
  if (options.finish_stage)
    if (auto st = options.finish_stage(stage); !st) {
      (void)detail::remove_tree(stage);
      return st.error();
    }
  const bool existed = fs::exists(status);
  const fs::path old = sibling(prefix, "old-" + std::to_string(::getpid()));
  if (!post_link.empty()) {
    // Post-link scripts run after the swap, with PREFIX the final prefix (as conda runs them);
    // until they all succeed the new tree is marked pending and the previous one is kept.
    nlohmann::json previous = nlohmann::json::array();
    if (existed) previous = {stage.filename().string(), old.filename().string()};
    const std::string marker = nlohmann::json{{"previous", previous}}.dump() + "\n";
    if (auto st = detail::write_new_file(stage / "conda-meta" / kPendingFile, marker, 0644); !st) {
      (void)detail::remove_tree(stage);
      return st.error();
    }
  }
  if (auto st = sync_before_swap(stage, packages, written); !st) {
    (void)detail::remove_tree(stage);
    return st.error();
  }

  if (options.before_swap) options.before_swap();
  if (generation.keep_previous) detail::note_keeping(prefix, {stage, old}, generation, report->warnings);

  // From the swap until the commit or the rollback, SIGINT/SIGTERM/SIGHUP wait (post-link
  // children get the default dispositions back); one that arrived makes the install roll back.
  std::optional<BlockedSignals> blocked;
  blocked.emplace();
  // Swap: `stage` then holds the previous tree (or nothing), `old` when two renames were used.
  fs::path previous_tree;
  if (existed) {
    if (::renameat2(AT_FDCWD, stage.c_str(), AT_FDCWD, prefix.c_str(), RENAME_EXCHANGE) == 0) {
      previous_tree = stage;
    } else if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP) {
      const int err = errno;
      (void)detail::remove_tree(stage);
      if (err == EBUSY || err == EXDEV) return mount_point_refusal(prefix);
      return io_error(prefix, "cannot swap the new environment into place", err);
    } else {
      // Filesystems without RENAME_EXCHANGE: move the old tree aside, then the new one in; a kill
      // between the two renames is repaired by recover() on the next run.
      if (::rename(prefix.c_str(), old.c_str()) != 0) {
        const int err = errno;
        (void)detail::remove_tree(stage);
        if (err == EBUSY || err == EXDEV) return mount_point_refusal(prefix);
        return io_error(prefix, "cannot move the previous environment aside", err);
      }
      if (::rename(stage.c_str(), prefix.c_str()) != 0) {
        const int err = errno;
        ::rename(old.c_str(), prefix.c_str());
        (void)detail::remove_tree(stage);
        return io_error(prefix, "cannot move the new environment into place", err);
      }
      previous_tree = old;
    }
  } else if (::rename(stage.c_str(), prefix.c_str()) != 0) {
    const int err = errno;
    (void)detail::remove_tree(stage);
    if (err == EBUSY || err == EXDEV) return mount_point_refusal(prefix);
    return io_error(prefix, "cannot move the new environment into place", err);
  }
  // Without post-link scripts the swap commits: the previous tree goes to its generation now.
  bool kept_generation = false;
  if (generation.keep_previous && post_link.empty() && !previous_tree.empty())
    if (auto kept = detail::keep_generation(prefix, previous_tree, generation, report->warnings); !kept.empty())
      previous_tree = kept, kept_generation = true;
  if (detail::fsync_written_files())
    if (auto st = fsync_dir(prefix.parent_path()); !st) return st.error();
  // What running jobs wrote into the old tree since its scan goes into the new one (hard links:
  // the previous tree, kept until the commit, still holds it for a rollback).
  if (!previous_tree.empty()) {
    std::set<std::string> owned;
    for (const auto& r : old_records) owned.insert(r.files.begin(), r.files.end());
    carry_late_paths(previous_tree, prefix, scanned, owned, report->warnings);
  }

  if (!post_link.empty()) {
    for (const auto* p : post_link) {
      auto st = run_script(prefix, p->record, "post-link", report->messages);
      const bool passed_on = g_interrupted_by != 0;  // to the script, which then stopped
      int sig = passed_on ? g_interrupted_by : blocked->pending();
      if (st && sig == 0) continue;
      Error e = st || passed_on ? Error{ErrorKind::Io, prefix.string(), "install interrupted by " + signal_name(sig), "", ""}
                                : st.error();
      if (sig != 0) {
        g_interrupted_by = sig;
        if (!st && !passed_on) e.detail += std::string(e.detail.empty() ? "" : "\n") + "interrupted by " + signal_name(sig);
      }
      std::vector<std::string> kept;  // files written into the prefix meanwhile, carried back
      auto back = roll_back_pending(prefix, true, &kept);
      for (const auto& w : kept) e.detail += std::string(e.detail.empty() ? "" : "\n") + w;
      if (!back) {
        e.detail += "\nrolling back failed: " + back.error().to_string();
        e.hint = "the unfinished environment is still in place; run the install again to restore the previous one";
        return e;
      }
      std::vector<std::string> left;
      (void)recover(prefix, left, NameLeftovers::No);  // deletes the discarded tree
      for (const auto& w : left) e.detail += "\n" + w;
      // A first install that files were written into meanwhile stays, holding only them.
      const std::string none = fs::exists(fs::symlink_status(prefix, ec))
                                   ? "nothing was installed; the files written meanwhile stay in the prefix"
                                   : "nothing was installed";
      if (sig != 0) {
        e.hint = existed ? "the previous environment was restored" : none;
        return e;
      }
      e.hint = existed ? "the previous environment was restored; fix the package or pass --no-scripts to skip post-link scripts"
                       : none + "; fix the package or pass --no-scripts to skip post-link scripts";
      return e;
    }
    // Commit point: the marker goes, durably.
    const fs::path meta = prefix / "conda-meta";
    if (::unlink((meta / kPendingFile).c_str()) != 0) return io_error(meta / kPendingFile, "cannot remove", errno);
    if (auto st = fsync_dir(meta); !st) return st.error();
  }
  blocked.reset();  // committed: a signal that waited is delivered now, as usual
  if (generation.keep_previous && !kept_generation && !previous_tree.empty())
    if (auto kept = detail::keep_generation(prefix, previous_tree, generation, report->warnings); !kept.empty())
      previous_tree = kept, kept_generation = true;
  if (options.keep_generations == KeepGenerations::Yes)
    detail::keep_lockfile(prefix, opts.origin.lockfile_hash, options.lockfile_text, report->warnings);
  bool keep_previous = false;  // a job still works in it
  if (!previous_tree.empty())
    adopt_working_folders(previous_tree, prefix, old_records, report->warnings, keep_previous);
  if (!previous_tree.empty() && !kept_generation && !keep_previous)
    if (auto st = detail::remove_tree(previous_tree); !st)
      report->warnings.push_back(leftover_warning("the previous environment's tree", st.error()));
  return report;
}
}  // namespace

Result<std::optional<PrefixOrigin>> read_prefix_origin(const fs::path& prefix) {
  const fs::path path = prefix / "conda-meta" / kOriginFile;
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::optional<PrefixOrigin>{};
  auto text = detail::read_file(path);
  if (!text) return text.error();
  nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return Error{ErrorKind::Parse, path.string(), "is not a JSON object", "",
                 "the file was edited or damaged; install the environment again"};
  }
  PrefixOrigin o;
  o.lockfile = j.value("lockfile", "");
  o.lockfile_hash = j.value("lockfile_hash", "");
  o.manifest_hash = j.value("manifest_hash", "");
  o.environment = j.value("environment", "");
  o.platform = j.value("platform", "");
  o.prefix = j.value("prefix", "");
  if (const auto g = j.find("generation"); g != j.end() && g->is_number_unsigned()) o.generation = g->get<std::uint64_t>();
  return std::optional<PrefixOrigin>(std::move(o));
}

namespace {
/// Refuses to remove a prefix whose `envs/` holds other environments (`envs/<name>/conda-meta/`,
/// folders, not links): a base prefix, as conda's root prefix holds its envs/. Deleting it would
/// delete them; conda refuses to remove its root environment (main_remove.py: "cannot remove root
/// environment"), and envlock refuses the same, naming them.
Status no_nested_environments(const fs::path& prefix) {
  std::vector<std::string> nested;
  std::error_code ec;
  for (fs::directory_iterator it(prefix / "envs", ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code type_ec;
    if (it->is_symlink(type_ec) || !it->is_directory(type_ec)) continue;
    if (fs::is_directory(fs::symlink_status(it->path() / "conda-meta", type_ec)))
      nested.push_back("envs/" + it->path().filename().string());
  }
  if (nested.empty()) return ok_status();
  std::sort(nested.begin(), nested.end());
  return Error{ErrorKind::Io, prefix.string(),
               "holds other environments in envs/ (" + listed(nested, 3) + ")",
               "removing it would delete them too; nothing was removed",
               "remove them first (envlock remove -p " + (prefix / nested.front()).string() +
                   "), or move them out of " + (prefix / "envs").string() + ", then run the command again"};
}
}  // namespace

Result<RemoveReport> remove_environment(const fs::path& prefix_in, RunScripts scripts, DryRun dry_run,
                                        const LockWait& on_lock_wait) {
  g_interrupted_by = 0;
  // Everything is checked before the lock file is created: a refusal writes nothing.
  auto checked = checked_prefix(prefix_in);
  if (!checked) return checked.error();
  const fs::path prefix = *checked;
  std::error_code ec;
  if (!fs::is_directory(fs::symlink_status(prefix, ec))) {
    return Error{ErrorKind::Io, prefix.string(), "is not an environment folder", "",
                 "check the path given with -p"};
  }
  if (is_mount_point(prefix)) return mount_point_refusal(prefix);
  if (auto st = no_nested_environments(prefix); !st) return st.error();
  // Only `conda-meta/envlock` decides that the prefix is envlock's (its content, and the other
  // records, may be damaged: removing must still work).
  if (!fs::exists(fs::symlink_status(prefix / "conda-meta" / kOriginFile, ec))) {
    return Error{ErrorKind::Io, prefix.string(),
                 "was not made by envlock (no conda-meta/envlock); refusing to delete it", "",
                 "remove it with the tool that made it"};
  }
  if (dry_run == DryRun::Yes) {
    RemoveReport report;
    std::set<std::string> damaged;
    for (const auto& r : read_records_tolerant(prefix, report.warnings, damaged)) report.removed.push_back(r.dist_name());
    std::sort(report.removed.begin(), report.removed.end());
    return report;
  }
  auto lock = PrefixLock::acquire(prefix, on_lock_wait);
  if (!lock) return lock.error();
  RemoveReport report;
  if (auto st = recover(prefix, report.warnings); !st) return st.error();
  if (!fs::exists(fs::symlink_status(prefix / "conda-meta" / kOriginFile, ec))) {
    return Error{ErrorKind::Io, prefix.string(), "is no longer an envlock environment (removed meanwhile?)", "",
                 "check the path given with -p"};
  }
  {
    std::set<std::string> damaged;
    auto records = read_records_tolerant(prefix, report.warnings, damaged);
    for (const auto& r : records) report.removed.push_back(r.dist_name());
    std::sort(report.removed.begin(), report.removed.end());
    // A mount point inside is refused before anything runs or moves.
    if (auto walked = walk_environment(prefix, [](const std::string&, const fs::path&, bool) { return ok_status(); });
        !walked)
      return walked.error();
    // Pre-unlink scripts run before the files go, as conda runs them; conda only warns on failure.
    if (scripts == RunScripts::Yes) {
      for (const auto& r : records) {
        auto st = run_script(prefix, r, "pre-unlink", report.messages);
        if (!st && g_interrupted_by != 0) {
          Error e = st.error();
          e.hint = "the environment was not removed (only what the script did itself is done)";
          return e;
        }
        if (!st)
          report.warnings.push_back(st.error().where + ": " + st.error().message + " (ignored, as conda does)\n" +
                                    st.error().detail);
      }
    }
    const fs::path aside = sibling(prefix, "stage-remove-" + std::to_string(::getpid()));
    if (::rename(prefix.c_str(), aside.c_str()) != 0) {
      const int err = errno;
      if (err == EBUSY || err == EXDEV) return mount_point_refusal(prefix);
      return io_error(prefix, "cannot move aside for removal", err);
    }
    if (auto st = detail::remove_tree(aside); !st)  // the environment is gone; what stayed is beside it
      report.warnings.push_back(leftover_warning("the removed environment's files", st.error()));
  }
  // The lock file goes with the environment. Another process may be waiting on it (flock on a
  // file that is then unlinked): it then holds a lock on a deleted file, finds no environment
  // and refuses, so nothing is ever changed under two locks at once.
  fs::remove(sibling(prefix, "lock"), ec);
  detail::remove_generations(prefix, report.warnings);  // its earlier states go with it
  return report;
}

Status detail::with_prefix_locked(const fs::path& prefix_in, std::vector<std::string>& warnings,
                                  const std::function<Status(const fs::path& prefix)>& body, FoundUnderLock* found,
                                  const LockWait& on_wait) {
  auto checked = checked_prefix(prefix_in);
  if (!checked) return checked.error();
  const fs::path prefix = *checked;
  std::error_code ec;
  if (!fs::is_directory(prefix.parent_path(), ec))
    return Error{ErrorKind::Io, prefix.string(), "is not an environment (its folder " + prefix.parent_path().string() +
                 " does not exist)", "", "check the path given with -p"};
  auto lock = PrefixLock::acquire(prefix, on_wait);
  if (!lock) return lock.error();
  auto nested = lock_nested_environments(prefix, on_wait);
  if (!nested) return nested.error();
  detail::adopt_kept_tree(prefix, &warnings);
  const fs::path marker = prefix / "conda-meta" / kPendingFile;
  const bool pending = fs::exists(fs::symlink_status(marker, ec));
  std::uint64_t pending_number = 0;
  if (auto origin = read_prefix_origin(prefix); pending && origin && *origin) pending_number = (*origin)->generation;
  if (auto st = recover(prefix, warnings); !st) return st;
  if (found != nullptr && pending && !fs::exists(fs::symlink_status(marker, ec)))
    *found = FoundUnderLock{true, pending_number};
  return body(prefix);
}

}  // namespace envlock
