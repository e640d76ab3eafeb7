#pragma once
// envlock/atomic_file.hpp — the one way envlock replaces a file: the reader of the path sees the
// old file or the new one, never a mix, and a writer killed half-way leaves no file behind.
// Used for lockfiles, manifests, snapshots and exports (a path the user named) and for the files
// envlock keeps inside a prefix or the package cache (a path envlock owns).

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string_view>

#include "envlock/result.hpp"

namespace envlock {

/// How write_file_atomic() treats the path it replaces.
struct AtomicWriteOptions {
  /// The new file's mode (set with fchmod, so the umask does not apply). When unset, the mode
  /// of the file being replaced is kept, and a new file gets 0644.
  std::optional<mode_t> mode;
  /// true: `path` is a path a user named (`-o FILE`, a lockfile beside the manifest); a symbolic
  /// link there is followed and the file it names is replaced, and a folder, device, FIFO or
  /// socket is refused (output_file_target(), envlock/paths.hpp). false: `path` is one envlock
  /// owns (inside a prefix or a cache entry); the entry itself is replaced by the rename, a link
  /// there included, and nothing is ever written through a link.
  bool follow_symlink = true;
  /// true: the file and its folder are flushed to disk (fsync) before and after the rename, so
  /// the new file survives a power loss. false for a cache that a crash may lose (the next run
  /// fetches or rebuilds it), as conda writes its repodata cache: the rename is still atomic.
  bool sync = true;
};

/// Writes `content` to `path` atomically: an unnamed temporary file (open(2) O_TMPFILE) in the
/// same directory, fsync (unless `sync` is false), a name given just for the rename over `path`,
/// fsync of the directory —
/// so a writer killed before the rename leaves no file behind. A crash leaves the old file or the
/// new one, never a mix; an existing file is never truncated. Where the filesystem has no
/// O_TMPFILE (or /proc is not mounted) the temporary file is named (`.<name>.tmp-XXXXXX`) and
/// flock(2)ed while it is written; one a killed writer left (lock free, over a minute old) is
/// removed by the next write. Errors: ErrorKind::Io naming the path and the system error (with
/// a hint for `ulimit -f`), or, when following links, what is there when `path` is a folder,
/// device, FIFO or socket.
Status write_file_atomic(const std::filesystem::path& path, std::string_view content,
                         const AtomicWriteOptions& options = {});

}  // namespace envlock
