#pragma once
// Small POSIX file helpers for the installer (private to src/install). Every failure is an
// ErrorKind::Io error naming the file and the system's reason.
#include <sys/stat.h>
#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "envlock/result.hpp"

namespace envlock::detail {

/// ErrorKind::Io for `path`: "<what>: <strerror(err)>", with a hint for ENOSPC/EACCES/EROFS.
Error io_error(const std::filesystem::path& path, const std::string& what, int err);

/// sha256 (lower-case hex) of bytes in memory / of a file (errors name the file).
std::string sha256_bytes(std::string_view data);
Result<std::string> sha256_file(const std::filesystem::path& path);

/// Reads a whole file (bounded: files over 4 GiB are refused).
Result<std::string> read_file(const std::filesystem::path& path);

/// Whether the files write_new_file() and copy_regular_file() write are collected for fsync:
/// yes unless ENVLOCK_INSTALL_SYNC=none (read once per process).
bool fsync_written_files();

/// While alive, collects the paths write_new_file() and copy_regular_file() write on this thread;
/// sync() fsyncs them from `threads` threads at once (concurrent fsyncs share journal commits,
/// where one after the other each waits for its own) and forgets them.
class WrittenFiles {
 public:
  WrittenFiles();
  ~WrittenFiles();
  WrittenFiles(const WrittenFiles&) = delete;
  WrittenFiles& operator=(const WrittenFiles&) = delete;
  Status sync(std::size_t threads);

  /// The collection the calling thread writes into (null: none).
  static std::vector<std::filesystem::path>* current();
  /// While alive, what this thread writes goes into `target` (a collection of another thread,
  /// from current(); null: none) — for worker threads of an install.
  class Join {
   public:
    explicit Join(std::vector<std::filesystem::path>* target);
    ~Join();
    Join(const Join&) = delete;
    Join& operator=(const Join&) = delete;

   private:
    std::vector<std::filesystem::path>* previous_;
  };

 private:
  std::vector<std::filesystem::path> paths_;
  std::vector<std::filesystem::path>* previous_;
};

/// Creates `path` (must not exist) with `data` and permission bits `mode` (collected, see above).
Status write_new_file(const std::filesystem::path& path, std::string_view data, mode_t mode);

/// Copies the bytes of regular file `from` into new file `to` with permission bits `mode`
/// (copy_file_range, falling back to read/write); collected for fsync (see WrittenFiles).
Status copy_regular_file(const std::filesystem::path& from, const std::filesystem::path& to,
                         mode_t mode);

/// fsync(2) of a directory (makes renames and new entries in it durable); EINVAL (a filesystem
/// that cannot sync a directory) is not an error.
Status fsync_dir(const std::filesystem::path& dir);

/// mkdir -p that reports errors as values.
Status make_dirs(const std::filesystem::path& path);

/// rm -rf that reports errors as values; a missing path is fine. It never crosses into another
/// filesystem (a mount point is left, and named as EBUSY). It goes on past an entry it
/// cannot remove (deleting all it can) and names that entry in the error, with how to clear an
/// immutable or append-only flag when that is the cause.
Status remove_tree(const std::filesystem::path& path);

/// Which mount `path` (not followed when a link) is on: its statx(2) mount ID (Linux >= 5.8), else
/// its device; 0 when it cannot be read. A bind mount of a folder of the same filesystem has the
/// device of its parent but another mount ID.
std::uint64_t mount_of(const std::filesystem::path& path);

/// The first folder at or below `root` (symbolic links not followed) that is on another mount
/// than `root` (mount_of(), so a bind mount of the same filesystem counts): a mount point inside
/// a tree that is to be moved or deleted. nullopt when there is none (or `root` is no folder).
std::optional<std::filesystem::path> mount_point_below(const std::filesystem::path& root);

/// The refusal of a mount point `mounted` inside an environment (install, remove, rollback):
/// nothing was changed, what to do.
Error mount_inside_refusal(const std::filesystem::path& mounted);

/// Whether the file at `path` (not followed when a link) has the immutable or append-only inode
/// flag (chattr +i / +a, FS_IOC_GETFLAGS): then nothing, root included, may link, rename, write
/// or delete it. False when the flags cannot be read (another filesystem, a special file).
bool immutable_or_append_only(const std::filesystem::path& path);

/// The message of a Tree refusal: a folder on the way is a link leading out of the root.
inline constexpr const char* kLeadsOutside =
    "is, or is below, a symbolic link that points outside the prefix; refusing to write through it";

/// The message of a Tree refusal: a folder on the way is a link back to the root or to conda-meta/.
inline constexpr const char* kLeadsIntoGuarded =
    "is, or is below, a symbolic link that leads to the prefix itself or to its conda-meta/; refusing to write "
    "through it";

/// The folder of a tree that only a path naming it may reach (Tree::dir): the environment's records.
inline constexpr const char* kGuardedFolder = "conda-meta";

/// A folder tree that is written only beneath its root (the install's stage). Every path given is
/// relative and '/'-separated; the kernel resolves it with openat2(2) RESOLVE_BENEATH (Linux >=
/// 5.6), so a symbolic link met on the way (one a package made, in-tree) is followed only while
/// it stays under the root: one that leads out (absolute, or `..` past the root) fails with EXDEV
/// and nothing is written. Where openat2 is missing (ENOSYS, or refused by a seccomp filter) each
/// component is opened with O_NOFOLLOW instead, so any symbolic link on the way is refused. The
/// last component is never followed: files are created with O_CREAT|O_EXCL, links with
/// link/symlinkat, removals with unlinkat — a symlink already at the destination is never written
/// through. Errors are ErrorKind::Io naming the relative path (ErrorKind::Integrity for a way out
/// through a link). A folder reached through a symbolic link that is the root itself or the root's
/// conda-meta/ (as it was when the Tree was opened: create it first) is refused the same way
/// (kLeadsIntoGuarded): only a path spelled `conda-meta/…` reaches the records, and the text
/// rules keep packages from spelling it. One Tree per thread: it caches the last folder opened.
class Tree {
 public:
  /// Opens `root` (an existing folder, itself not a symbolic link).
  static Result<Tree> open(const std::filesystem::path& root);
  Tree(Tree&& o) noexcept;
  Tree& operator=(Tree&&) = delete;
  Tree(const Tree&) = delete;
  ~Tree();

  const std::filesystem::path& root() const { return root_; }
  /// A descriptor (owned by the Tree, valid until the next call) of folder `rel` ("" = the root),
  /// made with its parents when `create` and missing.
  Result<int> dir(std::string_view rel, bool create);
  /// Forgets the cached folder (after something in the tree was removed or replaced).
  void forget();
  /// lstat(2) of `rel` (its parent resolved beneath the root); false when missing.
  Result<bool> lstat(std::string_view rel, struct stat& st);
  /// Removes the file or symbolic link `rel` (never a folder).
  Status unlink(std::string_view rel);
  /// Creates the symbolic link `rel` -> `target` (the parent made when missing); EEXIST as errno 
  /// in the error's detail is reported by returning false.
  Result<bool> symlink(std::string_view rel, const std::string& target);
  /// Hard-links `from` (an absolute path outside the tree: the package cache) at `rel`; false with
  /// errno kept when link(2) fails with EEXIST, EXDEV, EMLINK, EPERM or ENOTSUP (the caller copies
  /// or clears), an error otherwise.
  Result<bool> link_from(const std::filesystem::path& from, std::string_view rel, int& err);
  /// Creates `rel` (must not exist) holding `data` (write_new_file's rules, collected for fsync).
  Status write_new(std::string_view rel, std::string_view data, mode_t mode);
  /// Copies regular file `from` (outside the tree) into new file `rel` (copy_regular_file's rules).
  Status copy_new(const std::filesystem::path& from, std::string_view rel, mode_t mode);
  /// Gives the folder `rel` ("" = the root; must be a folder, not a link) permission bits `mode`
  /// (07777 kept), when envlock runs as root owner `uid`:`gid`, and the extended attributes of
  /// `from` (ACLs included): the attributes of the folder it replaces, so a reinstall keeps a
  /// user's setgid, group-writable, ACL-shared or service-owned folders.
  Status set_folder_attributes(std::string_view rel, const std::filesystem::path& from, mode_t mode, uid_t uid,
                               gid_t gid);
  /// Gives the file, FIFO or symbolic link `rel` (not followed) the access and modification
  /// times of `from` and, when envlock runs as root, its owner `from.st_uid`:`from.st_gid` (a
  /// regular file's or FIFO's permission bits are set again after that, since chown(2) clears
  /// setuid/setgid): what an entry of the old prefix had that is re-created (a symbolic link) or
  /// copied rather than hard-linked. fchownat(2)/utimensat(2) with AT_SYMLINK_NOFOLLOW.
  Status carry_attributes(std::string_view rel, const struct stat& from);
  /// Gives the folder `rel` ("" = the root) the access and modification times of `from_st`, the
  /// folder `from` it replaces, when both hold the same entry names: a folder whose entries an
  /// in-place update would not have touched keeps its times (conda changes a prefix in place);
  /// one that gained or lost an entry keeps the time it was changed, as in place (readers that
  /// cache a folder's listing by its mtime, such as Python's import system, see the change).
  /// Call it after everything is placed in the folder (and in those below it). Nothing is done
  /// when either folder cannot be read.
  Status keep_folder_times(std::string_view rel, const std::filesystem::path& from, const struct stat& from_st);
  /// Creates a FIFO at `rel` (the parent made when missing); false when something is there.
  Result<bool> fifo(std::string_view rel, mode_t mode);
  /// Whether following the symbolic link `rel` would leave the tree (openat2 reports EXDEV); false for a target inside, missing or not, and where openat2 is not available.
  bool link_leaves(std::string_view rel);

 private:
  Tree(std::filesystem::path root, int fd) : root_(std::move(root)), fd_(fd) {}
  Result<int> parent_of(std::string_view rel, std::string& name);
  std::filesystem::path root_;
  int fd_ = -1;
  std::string cached_rel_;
  int cached_fd_ = -1;
  std::vector<std::pair<dev_t, ino_t>> guarded_;  ///< the root and its conda-meta/, by identity
};

}  // namespace envlock::detail
