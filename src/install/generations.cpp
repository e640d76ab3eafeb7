// Generations of a prefix: the trees earlier installs replaced, kept beside it, listed, pinned,
// rolled back to in one rename, and removed by gc (envlock/generations.hpp; docs/environments.md
// "Generations"). The install transaction calls the hooks of generation_hooks.hpp.
#include "envlock/generations.hpp"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "fs_util.hpp"
#include "generation_hooks.hpp"

namespace envlock {

namespace fs = std::filesystem;
using detail::fsync_dir;
using detail::io_error;

namespace {

constexpr const char* kOrigin = "conda-meta/envlock";
constexpr const char* kPending = "conda-meta/envlock-pending";
constexpr const char* kRollingBack = "rolling-back";  // in the generations folder

RollbackSeam& rollback_seam() {
  static RollbackSeam seam;
  return seam;
}

fs::path normalized(const fs::path& prefix) {
  fs::path p = fs::absolute(prefix).lexically_normal();
  return p.has_filename() ? p : p.parent_path();
}

/// A generation folder's name: decimal digits, no leading zero, 1 to kMaxGenerationNumber.
std::optional<std::uint64_t> number_of_name(const std::string& name) {
  if (name.empty() || name.size() > 9 || name[0] == '0') return std::nullopt;
  if (!std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; })) return std::nullopt;
  return std::stoull(name);
}

std::optional<nlohmann::json> read_origin(const fs::path& tree) {
  auto text = detail::read_file(tree / kOrigin);
  if (!text) return std::nullopt;
  nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  return j;
}

/// The number a tree records (`"generation"` in its conda-meta/envlock); 0 when none, or when it
/// is above kMaxGenerationNumber (a hand edit: 2^64-1 wrapped the next number to 0 and hid the
/// tree, attack 23 F15), as for a non-number: the tree is numbered again above the others.
std::uint64_t tree_number(const fs::path& tree) {
  const auto j = read_origin(tree);
  if (!j) return 0;
  const auto it = j->find("generation");
  const std::uint64_t n = it != j->end() && it->is_number_unsigned() ? it->get<std::uint64_t>() : 0;
  return n <= kMaxGenerationNumber ? n : 0;
}

/// Writes `data` to `path` through a new sibling and rename(2), flushed: readers see the old or
/// the new bytes, and the new ones survive a power loss.
Status put_file(const fs::path& path, const std::string& data) {
  const fs::path tmp = path.parent_path() / ("." + path.filename().string() + ".tmp-" + std::to_string(::getpid()));
  ::unlink(tmp.c_str());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) return io_error(tmp, "cannot create", errno);
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      return io_error(tmp, "cannot write", err);
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return io_error(tmp, "cannot write", err);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return io_error(path, "cannot replace", err);
  }
  return ok_status();
}

/// Whether `path` is a folder (not a link) this user owns: what envlock itself keeps there. A
/// folder planted by someone else (another user who can write the parent, a checkout) is never
/// listed, rolled back to or deleted.
bool own_folder(const fs::path& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == ::geteuid();
}

Error not_own_folder(const fs::path& prefix, const fs::path& gens) {
  return Error{ErrorKind::Io, gens.string(), "is not a folder of this user's (a link, a file, or another owner's)",
               "envlock keeps the generations of " + prefix.string() + " there, and uses nothing it did not make",
               "remove it, then run the command again"};
}

/// The generations folder, made when missing (a folder of this user's, never through a link).
Result<fs::path> made_folder(const fs::path& prefix) {
  const fs::path gens = generations_folder(prefix);
  if (::mkdir(gens.c_str(), 0755) != 0 && errno != EEXIST) return io_error(gens, "cannot create", errno);
  if (!own_folder(gens)) return not_own_folder(prefix, gens);
  return gens;
}

/// A stored tree: the folder `<gens>/<name>` and the number the tree itself records.
struct Stored {
  std::uint64_t named = 0;   ///< the folder's name
  std::uint64_t number = 0;  ///< its tree's own number (0: none recorded; the name counts then)
  fs::path tree;
};

std::vector<Stored> stored_trees(const fs::path& gens) {
  std::vector<Stored> out;
  std::error_code ec;
  for (fs::directory_iterator it(gens, ec), end; !ec && it != end; it.increment(ec)) {
    const auto named = number_of_name(it->path().filename().string());
    if (!named || !own_folder(it->path())) continue;
    if (!fs::exists(fs::symlink_status(it->path() / kOrigin, ec))) continue;
    const std::uint64_t own = tree_number(it->path());
    out.push_back({*named, own != 0 ? own : *named, it->path()});
  }
  std::sort(out.begin(), out.end(), [](const Stored& a, const Stored& b) { return a.number < b.number; });
  return out;
}

/// Puts right what a killed command left in the generations folder (its lock held): a tree under
/// another generation's number (a rollback killed between its swap and its rename) is renamed to
/// its own; a tree gc renamed out of the listing (`.removing-*`) is deleted.
void repair(const fs::path& prefix, std::vector<std::string>& warnings) {
  const fs::path gens = generations_folder(prefix);
  if (!own_folder(gens)) return;
  std::error_code ec;
  for (fs::directory_iterator it(gens, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().filename().string().starts_with(".removing-") && own_folder(it->path()))
      if (auto st = detail::remove_tree(it->path()); !st)
        warnings.push_back("a generation gc removed could not all be deleted: " + st.error().to_string());
  for (const auto& s : stored_trees(gens)) {
    if (s.number == s.named) continue;
    const fs::path right = gens / std::to_string(s.number);
    if (fs::exists(fs::symlink_status(right, ec))) continue;
    if (::rename(s.tree.c_str(), right.c_str()) == 0) (void)fsync_dir(gens);
  }
}

/// The last `==> TIME <==` block of a tree's conda-meta/history: its time and `# cmd:` line.
void read_history(const fs::path& tree, Generation& g) {
  auto text = detail::read_file(tree / "conda-meta/history");
  if (!text) return;
  const auto at = text->rfind("==> ");
  if (at == std::string::npos) return;
  const auto end = text->find(" <==", at);
  if (end == std::string::npos) return;
  g.time = text->substr(at + 4, end - at - 4);
  const auto cmd = text->find("# cmd: ", end);
  if (cmd == std::string::npos) return;
  const auto eol = text->find('\n', cmd);
  g.command = text->substr(cmd + 7, eol == std::string::npos ? std::string::npos : eol - cmd - 7);
}

Generation describe(const fs::path& tree, const fs::path& gens, std::uint64_t number, bool current) {
  Generation g;
  g.number = number;
  g.current = current;
  g.tree = tree;
  if (const auto j = read_origin(tree)) {
    auto text = [&](const char* key) {
      const auto it = j->find(key);
      return it != j->end() && it->is_string() ? it->get<std::string>() : std::string();
    };
    g.lockfile = text("lockfile");
    g.lockfile_hash = text("lockfile_hash");
    g.manifest_hash = text("manifest_hash");
    g.environment = text("environment");
    g.platform = text("platform");
  }
  g.packages = generation_dists(tree).size();
  read_history(tree, g);
  std::error_code ec;
  // A pin is the regular file history --pin makes: a link or anything else planted under its name
  // is none (attack 30, F10 item 3: a planted link showed as pinned and kept the tree from gc).
  if (number != 0) g.pinned = fs::is_regular_file(fs::symlink_status(gens / (std::to_string(number) + ".pinned"), ec));
  if (g.lockfile_hash.starts_with("sha256:")) {
    const fs::path copy = gens / "lockfiles" / (g.lockfile_hash.substr(7) + ".lock");
    if (fs::is_regular_file(fs::symlink_status(copy, ec))) g.lockfile_copy = copy;
  }
  return g;
}

/// The tree `<gens>/keeping` (detail::note_keeping()) names when an install swapped it out and
/// committed (the prefix is the note's new number, not pending) and was killed before moving it
/// into the generations folder; its number goes to `previous`. Empty when there is none.
fs::path waiting_tree(const fs::path& prefix, std::uint64_t& previous) {
  const fs::path gens = generations_folder(prefix);
  if (!own_folder(gens)) return {};
  auto text = detail::read_file(gens / "keeping");
  if (!text) return {};
  const nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
  if (!j.is_object() || !j.contains("trees") || !j["trees"].is_array() || !j.contains("previous") ||
      !j["previous"].is_number_unsigned() || !j.contains("number") || !j["number"].is_number_unsigned())
    return {};
  previous = j["previous"].get<std::uint64_t>();
  std::error_code ec;
  if (tree_number(prefix) != j["number"].get<std::uint64_t>() || fs::exists(fs::symlink_status(prefix / kPending, ec)) ||
      fs::exists(fs::symlink_status(gens / std::to_string(previous), ec)))
    return {};
  const std::string mine = "." + prefix.filename().string() + ".envlock-";
  for (const auto& name : j["trees"]) {
    if (!name.is_string()) continue;
    const std::string n = name.get<std::string>();
    if (n.find('/') != std::string::npos || !n.starts_with(mine)) continue;
    const fs::path tree = prefix.parent_path() / n;
    if (own_folder(tree) && tree_number(tree) == previous && !fs::exists(fs::symlink_status(tree / kPending, ec)))
      return tree;
  }
  return {};
}

/// The tree an install left pending at `prefix` replaced (its marker's `previous`, as the
/// transaction's rollback of it reads them: a folder beside the prefix named `.<name>.envlock-*`,
/// itself not pending); empty when there is none (a first install).
fs::path replaced_by_pending(const fs::path& prefix) {
  auto text = detail::read_file(prefix / kPending);
  if (!text) return {};
  const nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
  if (!j.is_object() || !j.contains("previous") || !j["previous"].is_array()) return {};
  const std::string mine = "." + prefix.filename().string() + ".envlock-";
  std::error_code ec;
  for (const auto& name : j["previous"]) {
    if (!name.is_string()) continue;
    const std::string n = name.get<std::string>();
    if (n.find('/') != std::string::npos || !n.starts_with(mine)) continue;
    const fs::path tree = prefix.parent_path() / n;
    if (fs::is_directory(fs::symlink_status(tree, ec)) && !fs::exists(fs::symlink_status(tree / kPending, ec)))
      return tree;
  }
  return {};
}

std::vector<Generation> all_generations(const fs::path& prefix) {
  const fs::path gens = generations_folder(prefix);
  std::vector<Generation> out;
  std::error_code ec;
  std::uint64_t current = 0;
  if (fs::is_directory(fs::symlink_status(prefix / "conda-meta", ec))) {
    current = tree_number(prefix);
    out.push_back(describe(prefix, gens, current, true));
    // An install left pending (killed during its post-link scripts): its tree is not current,
    // the one it replaced is (the next command that takes the lock puts it back).
    if (fs::exists(fs::symlink_status(prefix / kPending, ec))) {
      out.back().current = false;
      out.back().interrupted = true;
      current = 0;
      if (const fs::path replaced = replaced_by_pending(prefix); !replaced.empty()) {
        current = tree_number(replaced);
        out.push_back(describe(replaced, gens, current, true));
      }
    }
  }
  if (own_folder(gens)) {
    std::set<std::uint64_t> seen{current};
    for (const auto& g : out) seen.insert(g.number);
    for (const auto& s : stored_trees(gens))
      if (seen.insert(s.number).second) out.push_back(describe(s.tree, gens, s.number, false));
    std::uint64_t waiting = 0;  // killed before it was moved in: still a generation
    if (const fs::path tree = waiting_tree(prefix, waiting); !tree.empty() && seen.insert(waiting).second)
      out.push_back(describe(tree, gens, waiting, false));
  }
  std::sort(out.begin(), out.end(), [](const Generation& a, const Generation& b) {
    return a.number != b.number ? a.number < b.number : !a.interrupted && b.interrupted;  // the same number: the interrupted one last
  });
  return out;
}

std::string numbers_text(const std::vector<Generation>& gens) {
  std::string out;
  for (const auto& g : gens)
    if (g.number != 0) out += (out.empty() ? "" : ", ") + std::to_string(g.number) + (g.current ? " (current)" : "");
  return out.empty() ? "none" : out;
}

Error no_such_generation(const fs::path& prefix, std::uint64_t number, const std::vector<Generation>& gens) {
  return Error{ErrorKind::Io, prefix.string(), "has no generation " + std::to_string(number),
               "generations: " + numbers_text(gens), "list them with `envlock history -p " + prefix.string() + "`"};
}

Error numbers_used_up(const fs::path& prefix) {
  return Error{ErrorKind::Io, prefix.string(),
               "has a generation numbered " + std::to_string(kMaxGenerationNumber) + ", the highest there is",
               "no next number can be given", "remove that generation (`envlock gc`), or install into a new prefix"};
}

/// Gives the tree at the prefix a number when it has none (made before generations, or by an
/// install that keeps none), above every stored one: written into its conda-meta/envlock.
Result<std::uint64_t> number_current(const fs::path& prefix, std::uint64_t highest) {
  auto j = read_origin(prefix);
  if (!j) return Error{ErrorKind::Io, (prefix / kOrigin).string(), "cannot be read as envlock's JSON", "",
                       "install the environment again"};
  if (highest >= kMaxGenerationNumber) return numbers_used_up(prefix);
  const std::uint64_t number = highest + 1;
  (*j)["generation"] = number;
  if (auto st = put_file(prefix / kOrigin, j->dump(2) + "\n"); !st) return st.error();
  return number;
}

/// Whether `packages` differ from `old` (the rule install_packages() carries a package by: the
/// same dist name and archive hash, sha256 else md5).
bool packages_change(const std::vector<PrefixRecord>& old, const std::vector<PackageToLink>& packages) {
  if (old.size() != packages.size()) return true;
  std::map<std::string, const PrefixRecord*> by_dist;
  for (const auto& r : old) by_dist[r.dist_name()] = &r;
  for (const auto& p : packages) {
    const auto it = by_dist.find(p.record.dist_name());
    if (it == by_dist.end()) return true;
    const PrefixRecord& r = *it->second;
    if (!r.sha256.empty() && !p.record.sha256.empty()) {
      if (r.sha256 != p.record.sha256) return true;
    } else if (r.md5.empty() || p.record.md5.empty() || r.md5 != p.record.md5) {
      return true;
    }
  }
  return false;
}

/// The note a rollback in two renames writes before its first: the generation it leaves
/// (`from`), the one it makes current (`to`) and that one's folder in the generations folder.
struct RollingBack {
  std::uint64_t from = 0, to = 0;
  std::string tree;
};

std::optional<RollingBack> read_rolling_back(const fs::path& gens) {
  auto text = detail::read_file(gens / kRollingBack);
  if (!text) return std::nullopt;
  const nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
  if (!j.is_object() || !j.contains("from") || !j["from"].is_number_unsigned() || !j.contains("to") ||
      !j["to"].is_number_unsigned() || !j.contains("tree") || !j["tree"].is_string())
    return RollingBack{};  // unreadable: nothing it names is moved
  RollingBack r{j["from"].get<std::uint64_t>(), j["to"].get<std::uint64_t>(), j["tree"].get<std::string>()};
  if (r.tree.empty() || r.tree.find('/') != std::string::npos || r.tree == "." || r.tree == "..") r.tree.clear();
  return r;
}

/// The rollback of a filesystem without RENAME_EXCHANGE (or of the test seam): the current tree
/// (generation `from`) moves to `keep`, its own folder in the generations folder, then `tree`
/// (generation `to`) to the prefix, each rename flushed. The note written first lets the next
/// command that takes the lock finish a rollback killed between the two (finish_rollback()).
Status rollback_in_two_renames(const fs::path& prefix, const fs::path& gens, const fs::path& tree, const fs::path& keep,
                               std::uint64_t from, std::uint64_t to) {
  const fs::path note = gens / kRollingBack;
  if (auto st = put_file(note, nlohmann::json{{"from", from}, {"to", to}, {"tree", tree.filename().string()}}.dump() + "\n");
      !st)
    return st;
  (void)fsync_dir(gens);
  if (::rename(prefix.c_str(), keep.c_str()) != 0) {
    const int err = errno;
    ::unlink(note.c_str());
    return io_error(prefix, "cannot move generation " + std::to_string(from) + " into " + keep.string(), err);
  }
  (void)fsync_dir(gens);
  (void)fsync_dir(prefix.parent_path());
  if (rollback_seam().between_renames) rollback_seam().between_renames();
  if (::rename(tree.c_str(), prefix.c_str()) != 0) {
    const int err = errno;
    if (::rename(keep.c_str(), prefix.c_str()) == 0) ::unlink(note.c_str());  // else the next command finishes it
    return io_error(prefix, "cannot move generation " + std::to_string(to) + " into place", err);
  }
  (void)fsync_dir(prefix.parent_path());
  ::unlink(note.c_str());
  (void)fsync_dir(gens);
  return ok_status();
}

/// Finishes a rollback in two renames that a kill stopped between them (the lock held): with no
/// tree at the prefix, the generation it was making current moves in (or, when that tree is not
/// whole any more, the one it left); the note goes either way. Anything else (the prefix is
/// there: the kill came before the first rename or after the second) only drops the note.
void finish_rollback(const fs::path& prefix, std::vector<std::string>* warnings) {
  const fs::path gens = generations_folder(prefix);
  if (!own_folder(gens)) return;
  const auto note = read_rolling_back(gens);
  if (!note) return;
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(prefix, ec))) {
    auto whole = [&](const fs::path& t, std::uint64_t number) {
      return own_folder(t) && tree_number(t) == number && !fs::exists(fs::symlink_status(t / kPending, ec));
    };
    const fs::path to = note->tree.empty() ? fs::path() : gens / note->tree, from = gens / std::to_string(note->from);
    const bool forward = note->to != 0 && !to.empty() && whole(to, note->to);
    const bool back = !forward && note->from != 0 && whole(from, note->from);
    if ((forward || back) && ::rename((forward ? to : from).c_str(), prefix.c_str()) == 0) {
      (void)fsync_dir(prefix.parent_path());
      (void)fsync_dir(gens);
      if (warnings != nullptr)
        warnings->push_back(std::string(forward ? "finished the rollback of " : "undid the rollback of ") +
                            prefix.string() + " to generation " + std::to_string(note->to) +
                            ", which was stopped between its two renames (its filesystem cannot swap two folders "
                            "in one step); generation " + std::to_string(forward ? note->to : note->from) +
                            " is current");
    } else {
      return;  // nothing whole to put there: the note stays, naming what is missing
    }
  }
  ::unlink((gens / kRollingBack).c_str());
  (void)fsync_dir(gens);
}

/// The warning of a command that found an interrupted install at the prefix and rolled it back
/// before its own work (`current`: the generation at the prefix now).
void say_rolled_back_install(const fs::path& prefix, const detail::FoundUnderLock& found, std::uint64_t current,
                             std::vector<std::string>& warnings) {
  if (!found.rolled_back_install) return;
  std::error_code ec;
  const bool there = fs::is_directory(fs::symlink_status(prefix / "conda-meta", ec));
  warnings.push_back("rolled back an install into " + prefix.string() +
                     " that did not finish (conda-meta/envlock-pending: killed, or stopped while its post-link "
                     "scripts ran)" +
                     (found.install_generation != 0 ? ": generation " + std::to_string(found.install_generation) +
                                                          " was never committed"
                                                    : std::string()) +
                     (!there ? std::string("; it was the first install, so there is no environment now")
                      : current != 0 ? "; generation " + std::to_string(current) + " is current again"
                                     : std::string("; the environment before it is current again")));
}

}  // namespace

void set_rollback_seam_for_tests(RollbackSeam seam) { rollback_seam() = std::move(seam); }

std::optional<Error> unusable_generations_folder(const fs::path& prefix_in) {
  const fs::path prefix = normalized(prefix_in);
  const fs::path gens = generations_folder(prefix);
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(gens, ec)) || own_folder(gens)) return std::nullopt;
  return not_own_folder(prefix, gens);
}

std::optional<std::uint64_t> interrupted_rollback(const fs::path& prefix_in) {
  const fs::path prefix = normalized(prefix_in);
  const fs::path gens = generations_folder(prefix);
  std::error_code ec;
  if (!own_folder(gens) || fs::exists(fs::symlink_status(prefix, ec))) return std::nullopt;
  const auto note = read_rolling_back(gens);
  if (!note || note->to == 0) return std::nullopt;
  return note->to;
}

fs::path generations_folder(const fs::path& prefix) {
  const fs::path p = normalized(prefix);
  return p.parent_path() / ("." + p.filename().string() + ".envlock-generations");
}

std::vector<std::string> generation_dists(const fs::path& tree) {
  std::vector<std::string> out;
  std::error_code ec;
  for (fs::directory_iterator it(tree / "conda-meta", ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.ends_with(".json") && name.size() > 5 && it->is_regular_file(ec)) out.push_back(name.substr(0, name.size() - 5));
  }
  std::sort(out.begin(), out.end());
  return out;
}

Result<std::vector<Generation>> list_generations(const fs::path& prefix_in) {
  if (prefix_in.empty())
    return Error{ErrorKind::Usage, "-p/--prefix", "is empty", "", "pass the environment folder with -p PREFIX"};
  const fs::path prefix = normalized(prefix_in);
  auto out = all_generations(prefix);
  if (out.empty())
    return Error{ErrorKind::Io, prefix.string(), "is not an environment and has no generations", "",
                 "check the path given with -p"};
  return out;
}

Result<std::vector<std::string>> set_generation_pinned(const fs::path& prefix_in, std::uint64_t number, bool pinned,
                                                       const LockWait& on_lock_wait) {
  std::vector<std::string> warnings;
  if (auto listed = list_generations(prefix_in); !listed) return listed.error();  // before any lock file
  detail::FoundUnderLock found;
  auto done = detail::with_prefix_locked(prefix_in, warnings, [&](const fs::path& prefix) -> Status {
    say_rolled_back_install(prefix, found, tree_number(prefix), warnings);
    repair(prefix, warnings);
    const auto gens = all_generations(prefix);
    if (number == 0 || std::none_of(gens.begin(), gens.end(), [&](const Generation& g) { return g.number == number; }))
      return no_such_generation(prefix, number, gens);
    auto folder = made_folder(prefix);
    if (!folder) return folder.error();
    const fs::path pin = *folder / (std::to_string(number) + ".pinned");
    if (pinned) {
      // Whatever else has the pin's name (a planted link, a folder) is no pin: replaced, never
      // followed (it said "cannot create: Too many levels of symbolic links").
      if (struct stat st {}; ::lstat(pin.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
        if (S_ISDIR(st.st_mode)) {
          if (auto gone = detail::remove_tree(pin); !gone) return gone.error();
        } else if (::unlink(pin.c_str()) != 0) {
          return io_error(pin, "is not the pin envlock makes and cannot be removed", errno);
        }
      }
      const int fd = ::open(pin.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
      if (fd < 0) return io_error(pin, "cannot create", errno);
      ::close(fd);
    } else if (::unlink(pin.c_str()) != 0 && errno != ENOENT) {
      return io_error(pin, "cannot remove", errno);
    }
    return fsync_dir(*folder);
  }, &found, on_lock_wait);
  if (!done) return done.error();
  return warnings;
}

Result<RollbackReport> rollback_generation(const fs::path& prefix_in, std::optional<std::uint64_t> to,
                                           const LockWait& on_lock_wait) {
  RollbackReport report;
  // Not an environment, no generations: refused before the lock file is made beside it, as gc
  // and history --pin refuse it (`rollback -p /etc` had created /.etc.envlock-lock, a write
  // outside any prefix).
  if (auto listed = list_generations(prefix_in); !listed) return listed.error();
  detail::FoundUnderLock found;
  auto done = detail::with_prefix_locked(prefix_in, report.warnings, [&](const fs::path& prefix) -> Status {
    std::error_code ec;
    const bool environment = fs::is_directory(fs::symlink_status(prefix / "conda-meta", ec));
    // The interrupted install rolled back was the first into the prefix: that was the step, and
    // no environment is left (it had said "holds no environment", exit 1, after doing it).
    if (found.rolled_back_install && !environment && !to) {
      report.interrupted_install = true;
      report.environment_left = false;
      report.from = found.install_generation;
      return ok_status();
    }
    if (!environment)
      return Error{ErrorKind::Io, prefix.string(), "holds no environment (no conda-meta/)", "",
                   "check the path given with -p"};
    repair(prefix, report.warnings);
    const fs::path gens = generations_folder(prefix);
    const auto stored = own_folder(gens) ? stored_trees(gens) : std::vector<Stored>{};
    std::uint64_t current = tree_number(prefix);
    // An interrupted install was rolled back first (history marked the tree it replaced current):
    // without --to that is the step back, and it stops there (attack 23 F2: it went on to the
    // generation before, two steps from what history showed).
    if (found.rolled_back_install && !to) {
      report.interrupted_install = true;
      report.from = found.install_generation;
      report.to = current;
      report.packages = generation_dists(prefix).size();
      return ok_status();
    }
    say_rolled_back_install(prefix, found, current, report.warnings);
    // A generations folder that is a link (or a file, or another user's) holds nothing envlock
    // uses: its reason, not "no generation older" (attack 23 F17).
    if (auto bad = unusable_generations_folder(prefix)) return *bad;
    auto listing = all_generations(prefix);
    // The target: --to N, else the newest generation older than the current one.
    std::uint64_t target = 0;
    if (to) {
      target = *to;
    } else {
      for (const auto& s : stored)
        if (current == 0 || s.number < current) target = std::max(target, s.number);
      if (target == 0)
        return Error{ErrorKind::Io, prefix.string(),
                     current == 0 ? "has no generations to roll back to"
                                  : "has no generation older than the current one (" + std::to_string(current) + ")",
                     "generations: " + numbers_text(listing),
                     "an install that changes the environment keeps the one it replaces; `envlock history` lists them"};
    }
    if (target != 0 && target == current) {
      report.from = report.to = current;
      report.packages = generation_dists(prefix).size();
      return ok_status();
    }
    const auto it = std::find_if(stored.begin(), stored.end(), [&](const Stored& s) { return s.number == target; });
    if (target == 0 || it == stored.end()) return no_such_generation(prefix, target, listing);
    const fs::path tree = it->tree;
    // What is swapped in must be what an install made for this very prefix path.
    if (fs::exists(fs::symlink_status(tree / kPending, ec)))
      return Error{ErrorKind::Io, tree.string(), "is marked as an install that did not finish", "",
                   "remove it with `envlock gc`, or choose another generation"};
    if (const auto j = read_origin(tree); j && j->contains("prefix") && (*j)["prefix"].is_string() &&
                                          !(*j)["prefix"].get<std::string>().empty() &&
                                          (*j)["prefix"].get<std::string>() != prefix.string())
      return Error{ErrorKind::Io, prefix.string(),
                   "generation " + std::to_string(target) + " was installed for " + (*j)["prefix"].get<std::string>(),
                   "its files name that path; made current here they would not work",
                   "install its lockfile instead: envlock install -l " +
                       (describe(tree, gens, target, false).lockfile_copy.empty()
                            ? std::string("LOCKFILE")
                            : describe(tree, gens, target, false).lockfile_copy.string()) +
                       " -p " + prefix.string()};
    {
      std::vector<std::string> nested;
      for (fs::directory_iterator e(prefix / "envs", ec), end; !ec && e != end; e.increment(ec))
        if (fs::is_directory(fs::symlink_status(e->path() / "conda-meta", ec)))
          nested.push_back("envs/" + e->path().filename().string());
      if (!nested.empty())
        return Error{ErrorKind::Io, prefix.string(), "holds other environments in envs/ (" + nested.front() + ")",
                     "a rollback swaps the whole tree, and would take them back to their state then; nothing was changed",
                     "move them out of " + (prefix / "envs").string() + " first"};
    }
    // A mount point inside either tree is refused, as install refuses it (walk_folder(),
    // transaction.cpp): the swap would carry what is mounted into the generations folder, out of
    // the environment's path (attack 30, F3).
    for (const fs::path& t : {prefix, tree})
      if (const auto mounted = detail::mount_point_below(t)) return detail::mount_inside_refusal(*mounted);
    // The tree at the prefix gets a number first when it has none, so that it is kept as one.
    if (current == 0) {
      std::uint64_t highest = 0;
      for (const auto& s : stored) highest = std::max(highest, s.number);
      auto n = number_current(prefix, highest);
      if (!n) return n.error();
      current = *n;
    }
    const fs::path keep = gens / std::to_string(current);
    if (fs::exists(fs::symlink_status(keep, ec)))
      return Error{ErrorKind::Io, keep.string(), "exists, but generation " + std::to_string(current) + " is the current one",
                   "", "move it away, then run the command again"};
    // The one step: the two trees change places. A kill before it leaves the current tree, after
    // it the chosen one; the folder it leaves under the chosen number is renamed to its own
    // number next (or by the next command, repair()).
    const bool exchanged = !rollback_seam().no_exchange &&
                           ::renameat2(AT_FDCWD, tree.c_str(), AT_FDCWD, prefix.c_str(), RENAME_EXCHANGE) == 0;
    if (!exchanged) {
      const int err = rollback_seam().no_exchange ? EINVAL : errno;
      if (err != EINVAL && err != ENOSYS && err != ENOTSUP)
        return io_error(prefix, "cannot swap generation " + std::to_string(target) + " into place", err);
      // No RENAME_EXCHANGE here: two renames, the note first (file comment, finish_rollback()).
      if (auto st = rollback_in_two_renames(prefix, gens, tree, keep, current, target); !st) return st;
    } else {
      if (auto st = fsync_dir(prefix.parent_path()); !st) report.warnings.push_back(st.error().to_string());
      if (::rename(tree.c_str(), keep.c_str()) != 0)
        report.warnings.push_back(
            io_error(keep, "cannot rename the previous generation's folder (the next command does)", errno).to_string());
      if (auto st = fsync_dir(gens); !st) report.warnings.push_back(st.error().to_string());
    }
    report.from = current;
    report.to = target;
    report.packages = generation_dists(prefix).size();
    return ok_status();
  }, &found, on_lock_wait);
  if (!done) return done.error();
  return report;
}

Result<GenerationGcReport> gc_generations(const fs::path& prefix_in, std::size_t keep, DryRun dry_run,
                                          const LockWait& on_lock_wait) {
  GenerationGcReport report;
  // Not an environment, no generations: refused as history refuses it, before a lock file is
  // made beside it (`gc -p /etc` said "no generation to remove" and the CLI cleaned the cache).
  if (auto listed = list_generations(prefix_in); !listed) return listed.error();
  detail::FoundUnderLock found;
  auto done = detail::with_prefix_locked(prefix_in, report.warnings, [&](const fs::path& prefix) -> Status {
    say_rolled_back_install(prefix, found, tree_number(prefix), report.warnings);
    if (auto bad = unusable_generations_folder(prefix)) return *bad;  // not "no generation to remove"
    repair(prefix, report.warnings);
    const fs::path gens = generations_folder(prefix);
    auto listing = all_generations(prefix);
    if (listing.empty())
      return Error{ErrorKind::Io, prefix.string(), "is not an environment and has no generations", "",
                   "check the path given with -p"};
    std::size_t others = 0;
    std::vector<Generation> gone;
    for (auto g = listing.rbegin(); g != listing.rend(); ++g) {  // newest first
      if (g->current || g->pinned || others++ < keep) {
        report.kept.insert(report.kept.begin(), *g);
        continue;
      }
      gone.insert(gone.begin(), *g);
    }
    for (const auto& g : gone) {
      const std::string number = std::to_string(g.number);
      auto not_removed = [&](std::string why) {
        report.not_removed.push_back(g.number);
        report.not_removed_trees.push_back(g.tree);
        report.warnings.push_back(std::move(why));
      };
      // What is mounted in a tree is never moved or deleted (attack 30, F3: gc said "removed
      // generation 2" of a tree it could not delete): the generation stays listed, whole.
      if (const auto mounted = detail::mount_point_below(g.tree)) {
        not_removed(mounted->string() + ": is a mount point inside generation " + number +
                    " (another filesystem); what is mounted is never deleted, so the generation was kept: unmount "
                    "it, then run the command again");
        continue;
      }
      if (dry_run == DryRun::Yes) {
        report.removed.push_back(g.number);
        report.removed_trees.push_back(g.tree);
        continue;
      }
      // Out of the listing in one rename, then deleted: a kill leaves it whole or gone.
      const fs::path aside = gens / (".removing-" + number + "-" + std::to_string(::getpid()));
      if (::rename(g.tree.c_str(), aside.c_str()) != 0) {
        not_removed(io_error(g.tree, "cannot remove generation " + number, errno).to_string());
        continue;
      }
      if (auto st = detail::remove_tree(aside); !st) {
        not_removed("generation " + number + " could not all be deleted: " + st.error().to_string());
        continue;
      }
      report.removed.push_back(g.number);
      report.removed_trees.push_back(g.tree);
    }
    // Lockfile copies no generation left names.
    std::set<std::string> named;
    for (const auto& g : report.kept)
      if (!g.lockfile_copy.empty()) named.insert(g.lockfile_copy.filename().string());
    for (const auto& g : gone)  // a generation that could not be removed keeps its lockfile
      if (!g.lockfile_copy.empty() &&
          std::find(report.not_removed.begin(), report.not_removed.end(), g.number) != report.not_removed.end())
        named.insert(g.lockfile_copy.filename().string());
    std::error_code ec;
    for (fs::directory_iterator it(gens / "lockfiles", ec), end; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (!name.ends_with(".lock") || named.count(name)) continue;
      ++report.lockfiles_removed;
      if (dry_run == DryRun::No) ::unlink(it->path().c_str());
    }
    return ok_status();
  }, &found, on_lock_wait);
  if (!done) return done.error();
  return report;
}

namespace detail {

Result<GenerationPlan> plan_generation(const fs::path& prefix, bool has_old, const std::vector<PrefixRecord>& old_records,
                                       const std::vector<PackageToLink>& packages, bool stage_differs) {
  std::vector<std::string> ignored;
  repair(prefix, ignored);
  GenerationPlan plan;
  std::uint64_t highest = 0;
  const fs::path gens = generations_folder(prefix);
  if (own_folder(gens))
    for (const auto& s : stored_trees(gens)) highest = std::max(highest, s.number);
  std::uint64_t current = has_old ? tree_number(prefix) : 0;
  highest = std::max(highest, current);
  // A conda environment envlock did not make (no conda-meta/envlock; install --force adopts it,
  // docs/install.md) is no generation of envlock's: it becomes the lockfile's in place, files no
  // record owns carried over, and is not kept (numbering it wrote into a file that is not there:
  // "conda-meta/envlock: cannot be read", attack 30, F6).
  std::error_code origin_ec;
  const bool foreign = has_old && !fs::exists(fs::symlink_status(prefix / kOrigin, origin_ec));
  if (!has_old || old_records.empty() || foreign) {  // nothing there worth keeping
    if (highest >= kMaxGenerationNumber) return numbers_used_up(prefix);
    plan.number = highest + 1;
    return plan;
  }
  if (current == 0) {  // made before generations (or by an install that keeps none): numbered now
    auto n = number_current(prefix, highest);
    if (!n) return n.error();
    current = highest = *n;
  }
  if (!stage_differs && !packages_change(old_records, packages)) {  // the same generation, made again
    plan.number = current;
    return plan;
  }
  if (highest >= kMaxGenerationNumber) return numbers_used_up(prefix);
  plan.previous = current;
  plan.keep_previous = true;
  plan.number = highest + 1;
  return plan;
}

fs::path keep_generation(const fs::path& prefix, const fs::path& previous_tree, const GenerationPlan& plan,
                         std::vector<std::string>& warnings) {
  auto gens = made_folder(prefix);
  if (!gens) {
    warnings.push_back("the previous environment could not be kept as generation " + std::to_string(plan.previous) +
                       ": " + gens.error().to_string());
    return {};
  }
  const fs::path target = *gens / std::to_string(plan.previous);
  std::error_code ec;
  if (fs::exists(fs::symlink_status(target, ec))) {  // a stale folder under that number: replaced
    const fs::path aside = *gens / (".removing-" + std::to_string(plan.previous) + "-" + std::to_string(::getpid()));
    if (::rename(target.c_str(), aside.c_str()) == 0) (void)detail::remove_tree(aside);
  }
  if (::rename(previous_tree.c_str(), target.c_str()) != 0) {
    warnings.push_back("the previous environment could not be kept as generation " + std::to_string(plan.previous) +
                       ": " + io_error(target, "cannot move it there", errno).to_string());
    return {};
  }
  (void)fsync_dir(*gens);
  (void)fsync_dir(prefix.parent_path());
  ::unlink((*gens / "keeping").c_str());  // kept: the note of note_keeping() is done
  return target;
}

void note_keeping(const fs::path& prefix, const std::vector<fs::path>& trees, const GenerationPlan& plan,
                  std::vector<std::string>& warnings) {
  if (!plan.keep_previous) return;
  auto gens = made_folder(prefix);
  nlohmann::json names = nlohmann::json::array();
  for (const auto& t : trees) names.push_back(t.filename().string());
  Status st = gens ? put_file(*gens / "keeping", nlohmann::json{{"trees", names}, {"previous", plan.previous},
                                                                  {"number", plan.number}}.dump() + "\n")
                   : Status(gens.error());
  if (!st) warnings.push_back("a kill during this install could lose generation " + std::to_string(plan.previous) + ": " +
                              st.error().to_string());
}

void adopt_kept_tree(const fs::path& prefix, std::vector<std::string>* warnings) {
  finish_rollback(prefix, warnings);
  const fs::path gens = generations_folder(prefix);
  std::uint64_t previous = 0;
  const fs::path tree = waiting_tree(prefix, previous);
  ::unlink((gens / "keeping").c_str());
  if (tree.empty()) return;
  if (::rename(tree.c_str(), (gens / std::to_string(previous)).c_str()) == 0) {
    (void)fsync_dir(gens);
    (void)fsync_dir(prefix.parent_path());
  }
}

void keep_lockfile(const fs::path& prefix, const std::string& lockfile_hash, const std::string& text,
                   std::vector<std::string>& warnings) {
  if (text.empty() || !lockfile_hash.starts_with("sha256:")) return;
  const std::string hex = lockfile_hash.substr(7);
  if (detail::sha256_bytes(text) != hex) return;  // changed since it was hashed: not this one
  auto gens = made_folder(prefix);
  if (!gens) {
    warnings.push_back("the lockfile could not be kept with the generation: " + gens.error().to_string());
    return;
  }
  const fs::path dir = *gens / "lockfiles", copy = dir / (hex + ".lock");
  std::error_code ec;
  if (fs::exists(fs::symlink_status(copy, ec))) return;
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    warnings.push_back("the lockfile could not be kept with the generation: " + io_error(dir, "cannot create", errno).to_string());
    return;
  }
  if (auto st = put_file(copy, text); !st)
    warnings.push_back("the lockfile could not be kept with the generation: " + st.error().to_string());
}

void remove_generations(const fs::path& prefix, std::vector<std::string>& warnings) {
  const fs::path gens = generations_folder(prefix);
  if (!own_folder(gens)) return;
  if (auto st = detail::remove_tree(gens); !st)
    warnings.push_back("the environment's generations could not all be deleted: " + st.error().to_string());
}

}  // namespace detail
}  // namespace envlock
