#pragma once
// envlock/input_file.hpp — the one way envlock reads a file a user, a manifest or a pull request
// names as input (a manifest, an envlock.lock, a base lockfile): a regular file of the project,
// bounded, never blocking, and never quoted when it is not the kind of file expected.

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "envlock/result.hpp"

namespace envlock {

/// What read_input_file found.
struct InputFile {
  enum class Problem {
    None,      ///< `text` holds the whole file
    Open,      ///< it cannot be opened (`error_number`: errno, ENOENT for a missing file)
    Refused,   ///< not a regular file, or one of /proc, /sys or /dev (`message` says which)
    TooLarge,  ///< more than the cap
    Read,      ///< a read failed part-way (`error_number`)
  };
  Problem problem = Problem::None;
  int error_number = 0;
  std::string message;  ///< Problem::Refused: "is a FIFO, not a regular file", ...
  std::string text;
};

/// read_input_file()'s rule on where a file may be, for readers that open it themselves (a local
/// wheel or package URL of a lockfile): the refusal ("is in /proc, not a file of a project; it is
/// not read") when the real path of `path` (links followed) is in /proc, /sys or /dev or on a proc
/// or sysfs file system; empty otherwise (also when it does not exist).
std::string system_file_refusal(const std::filesystem::path& path);

/// Reads `path` whole, at most `max_bytes` (counted while reading: the size fstat gives is not
/// trusted). The real path (links followed) must not be in /proc, /sys or /dev, nor on a proc or
/// sysfs file system: `/proc/self/environ` is a regular file whose text is every secret of the
/// process. It is opened with O_NONBLOCK|O_CLOEXEC (a FIFO with no writer never blocks) and refused
/// unless fstat calls it a regular file (a FIFO, a device such as /dev/zero, a socket, a folder).
/// conda and pixi read a manifest or lockfile with a plain open(); envlock is stricter because a
/// manifest (base: {lockfile: ...}) or a pull request can name any path on the machine.
/// `system_folders` false leaves out the /proc, /sys and /dev rule on the real path (the proc and
/// sysfs file-system check, the regular-file check and the cap stay): for a file that is not a
/// link inside a folder the user chose, such as a conda-meta record of a prefix on `/dev/shm`.
InputFile read_input_file(const std::filesystem::path& path, std::uintmax_t max_bytes, bool system_folders = true);

/// True when the first line of `text` that is not empty, a `#` comment, a `---` document start or
/// a `%` directive starts a YAML block map entry (`key:` followed by a space or the end of the
/// line, the key plain or quoted) or a flow map (`{`), or when there is no such line: the shape every envlock.yaml, envlock.lock,
/// conda-lock.yml and pixi.lock has. A parse error in a file of another shape (/etc/shadow, a
/// token file, an environment block) must not quote its text: callers name the file and stop.
bool starts_like_yaml_map(std::string_view text);

/// The refusal of a file that fails starts_like_yaml_map, ErrorKind::Parse at `where`: "is not
/// WHAT: its first line is not YAML `key: value`; its text is not shown", with a hint to check
/// the path. No line, key or caret of the file is quoted.
Error input_not_yaml_map(const std::string& where, const std::string& what);

}  // namespace envlock
