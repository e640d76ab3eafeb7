#pragma once
// Reading a lockfile named on the command line, as `envlock diff` and `envlock show` accept it:
//   PATH      a file in any format readers.hpp reads, or an environment prefix directory;
//   -         standard input; relative local channels (envlock.lock's `../channel`) resolve
//             against the current directory;
//   REV:PATH  the file as committed in git revision REV (`git show REV:PATH`, run in the current
//             directory), when no file of that name exists; relative local channels resolve
//             against PATH's folder in the working tree (PATH relative to the top level, or to the
//             current directory when it starts with ./ or ../, as git reads it), so a committed
//             and a checked-out copy of one lockfile compare equal.
// Errors are values naming the argument; `git show` failures carry git's own message.

#include <filesystem>
#include <string>

#include <new>

#include "envlock/diff.hpp"
#include "envlock/readers.hpp"
#include "envlock/result.hpp"
#include "registry.hpp"

namespace envlock::cli {

struct LockInput {
  ReadResult read;
  std::string label;  ///< the argument as given (for output headers)
  /// The whole text when the input is an envlock snapshot file (it starts with the
  /// `# envlock snapshot` line capture writes), for the host facts `read` leaves out; else empty.
  std::string snapshot_text;
  /// The folder an envlock.lock's relative local channels were resolved against (the file's, the
  /// working-tree folder of REV:PATH, the current folder for `-`); empty when they were kept as
  /// written. Lockfile::written_locations() spells them back with it.
  std::filesystem::path directory;
};

/// How relative local channels (an envlock.lock's `../channel`) are read.
enum class LocalChannels {
  Resolve,  ///< into file:// URLs against the file's folder (see the file comment): `diff`
  AsWritten,  ///< kept as the file holds them, wherever it sits: `show`, whose output git's
              ///< textconv compares between a temporary copy and the working tree
};

/// Reads the lockfile that `arg` names (see the file comment).
Result<LockInput> read_lock_input(const std::string& arg, LocalChannels channels = LocalChannels::Resolve);

/// Runs the body of `diff` or `show` (which exit 2 for every error, docs/cli.md): memory running
/// out on a huge input (std::bad_alloc) is reported as an error of the input, exit 2, instead of
/// reaching main's "internal" handler (exit 1, which for `diff --fail-on` means "a change found").
template <class Body>
int exit_2_when_out_of_memory(const Context& ctx, const std::string& inputs, Body&& body) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    report_error(ctx, Error{ErrorKind::Io, inputs, "out of memory while reading the input", "",
                            "a lockfile this large is not one envlock can read here: check that the input is the "
                            "file meant (not a device such as /dev/zero), or run with more memory"});
    return 2;
  }
}

/// Reads `path` for a command that works from envlock's own lockfile only (`install`, `list -l`,
/// `export`, `probe -l`; `command` is its name, e.g. "install"): Lockfile::read. When that fails on
/// a file detect_lock_format recognises as another format (conda-lock, pixi.lock, @EXPLICIT), the
/// error says so instead of quoting envlock.lock's parser: "is a conda-lock v1 file, not an
/// envlock.lock", with a hint naming what reads it (`show`, `diff`, the format's own tool) and how
/// to get an envlock.lock (`envlock lock -f environment.yml`). Other errors are Lockfile::read's.
Result<Lockfile> read_envlock_lockfile(const std::string& path, const std::string& command);

/// The record fields a format holds (docs/review.md, "Compared fields"), for diff_lockfiles:
/// what `envlock diff` compares a side on (its recorded_fields, in diff.cpp), for `envlock
/// snapshot diff` to compare the same way; solve inputs (channels, virtual packages) are not
/// compared there, as `diff` compares none of a snapshot's.
RecordedFields format_recorded_fields(const FormatInfo& f);

}  // namespace envlock::cli
