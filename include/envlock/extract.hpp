#pragma once
// envlock/extract.hpp — unpacking conda package archives, safely, without temporary copies.
//
// Formats (conda's package formats, https://docs.conda.io/projects/conda/en/latest/user-guide/
// concepts/packages.html):
//   .tar.bz2  a bzip2-compressed tar holding info/ and the package files;
//   .conda    (CEP-2 "conda package format v2") a ZIP (stored) holding metadata.json,
//             info-<dist>.tar.zst (the info/ folder) and pkg-<dist>.tar.zst (everything else;
//             absent in packages without files). Members are found by base name, also when a
//             tool stored them below a folder of the ZIP.
// Both inner tars of a .conda are streamed straight out of the ZIP into the destination; nothing
// is decompressed into a temporary file. libarchive is used here and nowhere else in envlock; no
// libarchive type crosses this header.
//
// Untrusted input: every entry is checked before anything is written for it. Refused, with the
// archive, the inner tar and the entry named (ErrorKind::Integrity):
//   * absolute paths, and paths with a `..` component;
//   * entries written through a symlink made by an earlier entry;
//   * symlinks whose target is absolute or resolves (through the package's other symlinks) to a
//     place outside the package directory; hard links to such places;
//   * character/block devices, FIFOs and sockets;
//   * more file content than the archive's cap (ExtractLimits: max_expansion_ratio times the
//     archive's size, at least expansion_floor, at most max_total_bytes), checked against each
//     entry's declared size before it is written and against the bytes as they arrive, so a
//     bomb is refused before the disk fills; more than max_entries entries. The error names the
//     cap that was passed;
//   * a corrupt or truncated archive, and an archive without info/index.json.
// File modes keep the owner's permission bits and group/other read and execute (masked with 0755:
// setuid/setgid/sticky and group/other write dropped, so a shared cache cannot be altered through
// a world-writable file); modification times are kept for files (Python's .pyc validation
// compares them); owners are not restored. A symlink entry with an empty target (made on hosts
// without symlinks; POSIX cannot create one) is written as an empty file, as the .tar.bz2 form
// of such packages holds it.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "envlock/result.hpp"

namespace envlock {

/// The two conda archive formats.
enum class ArchiveFormat { Conda, TarBz2 };

/// Format from a file name's extension (".conda" or ".tar.bz2"); nullopt for anything else.
std::optional<ArchiveFormat> archive_format(std::string_view file_name);

/// Bounds against archive bombs. The content (sum of regular file sizes) of one archive may be at
/// most max(max_expansion_ratio x the archive file's size, expansion_floor), and never more than
/// max_total_bytes. The defaults fit the largest real packages (CUDA libraries are a few GiB
/// unpacked, about 3x their archive; text-heavy packages such as repodata patches reach 30x)
/// with a wide margin. conda, mamba and rattler set no such bound.
struct ExtractLimits {
  std::uint64_t max_total_bytes = 64ULL << 30;   ///< the absolute cap, in bytes
  std::uint64_t max_expansion_ratio = 250;       ///< content / archive size; 0 = only the absolute cap
  std::uint64_t expansion_floor = 1ULL << 30;    ///< the derived cap is never below this (1 GiB)
  std::uint64_t max_entries = 2'000'000;         ///< entries of all inner archives together
};

/// What an extraction wrote.
struct ExtractStats {
  std::uint64_t files = 0;        ///< regular files (hard links included)
  std::uint64_t directories = 0;  ///< directories created (listed or implied by a path)
  std::uint64_t symlinks = 0;     ///< symbolic links
  std::uint64_t bytes = 0;        ///< bytes of file content written
};

/// Extracts `archive` (format from its extension) into the existing directory `directory`.
/// Not atomic: on error the directory holds whatever was written so far; callers that need
/// all-or-nothing use extract_package(). Errors: ErrorKind::Integrity (unsafe entry, corrupt
/// archive, limits exceeded; `where` is the archive path), ErrorKind::Io (cannot write),
/// ErrorKind::Usage (not a .conda or .tar.bz2 file name).
Result<ExtractStats> extract_into(const std::filesystem::path& archive, const std::filesystem::path& directory,
                                  const ExtractLimits& limits = {});

/// Called with the staging directory after a successful extraction, before it is renamed into
/// place (e.g. to write a completion marker). A failure aborts the extraction.
using BeforeCommit = std::function<Status(const std::filesystem::path& staging)>;

/// Extracts `archive` into `destination`, all or nothing: the archive is unpacked into a fresh
/// sibling directory (`.<name>.extracting-<pid>-<n>`, same filesystem), `before_commit` runs, and
/// the directory is renamed onto `destination`, which must not exist (ErrorKind::Io otherwise).
/// On any failure the staging directory is removed and `destination` is untouched.
Result<ExtractStats> extract_package(const std::filesystem::path& archive, const std::filesystem::path& destination,
                                     const ExtractLimits& limits = {}, const BeforeCommit& before_commit = {});

// ---------------------------------------------------------------------------------------------
// Bundles and writing archives (libarchive's writer; still no libarchive type in this header)
// ---------------------------------------------------------------------------------------------

/// Extracts a zstd-compressed tar (an envlock snapshot bundle, `*.tar.zst`) into the existing
/// directory `directory`, with every check listed above for packages (no info/index.json is
/// required). Not atomic: callers extract into a folder of their own and delete it on error.
/// Errors as extract_into(); ErrorKind::Integrity names the archive for a corrupt one.
Result<ExtractStats> extract_tar_zst_into(const std::filesystem::path& archive, const std::filesystem::path& directory,
                                          const ExtractLimits& limits = {});

/// One entry to write into an archive.
struct ArchiveEntry {
  enum class Kind { File, Symlink, Directory };
  std::string path;                 ///< relative, '/'-separated, no `.` or `..` component
  Kind kind = Kind::File;
  std::filesystem::path source;     ///< File: a local file whose bytes are written (read while writing)
  std::string content;              ///< File: the bytes, when `source` is empty
  std::string link_target;          ///< Symlink: relative target
  std::uint32_t mode = 0644;        ///< permission bits of files and directories
  std::int64_t mtime = 0;           ///< seconds since the epoch; 0 keeps archives reproducible
};

/// Writes `entries` (sorted by path, so equal input gives byte-identical output) as a POSIX pax
/// tar compressed with zstd at `level` (1-19) to `archive`, atomically: a temporary file beside
/// it, fsync(2), rename(2); a link at `archive` is followed (output_file_target, envlock/paths.hpp).
/// Owners are written as root (0:0). Errors: ErrorKind::Usage (an
/// absolute or `..` path, a path listed twice, an absolute symlink target), ErrorKind::Io naming
/// the source file or the archive (cannot read, cannot write, `archive` is a folder or device;
/// nothing is left at `archive`).
Status write_tar_zst(const std::filesystem::path& archive, std::vector<ArchiveEntry> entries, int level = 3);

/// Writes a `.conda` package (CEP-2, the layout described at the top of this file): a ZIP with
/// stored members `metadata.json` ({"conda_pkg_format_version": 2}), `pkg-<dist>.tar.zst`
/// (every entry outside info/; left out when there is none) and `info-<dist>.tar.zst` (the
/// entries under info/), where <dist> is the file name of `archive` without `.conda`. Atomic
/// as write_tar_zst(). Errors as write_tar_zst(), and ErrorKind::Usage when the name does not end
/// in `.conda` or no entry is `info/index.json`. extract_into() reads the result.
Status write_conda_package(const std::filesystem::path& archive, std::vector<ArchiveEntry> entries, int level = 3);

// ---------------------------------------------------------------------------------------------
// Reading a ZIP member by member (wheels, PEP 427; still no libarchive type in this header)
// ---------------------------------------------------------------------------------------------

/// One member of a ZIP archive as read_zip() hands it over: what its central directory record
/// says (PKWARE APPNOTE 4.4), unchecked — the caller judges the name and the kind. Two readings
/// are libarchive's and differ from Python's zipfile (tests/wheel/wheel_test.cpp): a `\` in a
/// stored name is handed over as `/`, and a Unix FIFO mode reads as a File (devices and sockets
/// keep their kind); the size is the local header's.
struct ZipMember {
  /// The type from the external attributes: a member made on Unix carries `st_mode` in their
  /// upper 16 bits (Info-ZIP's convention, which Python's zipfile writes); one made elsewhere is
  /// a File, or a Directory when its name ends in `/` or its MS-DOS directory bit is set.
  enum class Kind { File, Directory, Symlink, Device, Fifo, Socket, Other };
  std::string name;                   ///< the stored name (UTF-8 when the archive says so), as is
  Kind kind = Kind::File;
  std::uint32_t mode = 0;             ///< permission bits (Unix-made: from the attributes; else 0664/0775)
  std::optional<std::uint64_t> size;  ///< the declared uncompressed size, when recorded
  std::string link_target;            ///< Symlink: the target, as stored
};

/// The bytes of the member read_zip() is at, read block by block (inflated and checked against
/// the member's CRC-32 by libarchive). Valid only during the visitor's call.
class ZipMemberReader {
 public:
  /// The next block of the member's bytes; an empty view at its end. The view lives until the
  /// next call. Errors: ErrorKind::Integrity (corrupt or truncated data, a CRC mismatch, an
  /// encrypted member, content past the archive's cap, naming the archive and the member).
  Result<std::string_view> next();

  struct State;  ///< read_zip()'s reading state (src/extract/zip.cpp)
  explicit ZipMemberReader(State& state) : state_(&state) {}

 private:
  State* state_;
};

/// Called for each member of the archive in central-directory order. It may read the member's
/// bytes through `data` (all, some or none); an error it returns stops read_zip(), which returns it.
using ZipVisitor = std::function<Status(const ZipMember& member, ZipMemberReader& data)>;

/// Reads the ZIP archive `archive` (any name; a wheel is one) from its central directory, as
/// Python's zipfile (pip, installer) and uv's reader do, so a local header that disagrees with it
/// cannot hide a member. Stored and deflated members are read; bytes handed over count against
/// `limits` (max_entries members; content past the cap of ExtractLimits is refused as in
/// extract_into(), before the bytes of a member whose declared size passes it are read).
/// Nothing is written. Errors: ErrorKind::Io (the file cannot be opened), ErrorKind::Integrity
/// (not a ZIP, corrupt or truncated, limits passed; `where` is the archive path), or the
/// visitor's error.
Status read_zip(const std::filesystem::path& archive, const ZipVisitor& visit, const ExtractLimits& limits = {});

}  // namespace envlock
