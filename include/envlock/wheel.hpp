#pragma once
// envlock/wheel.hpp — installing one Python wheel into an environment prefix, natively (no pip,
// no Python needed to install), all or nothing.
//
// Standards followed:
//   PEP 427 and the packaging "Binary distribution format" specification
//     (https://packaging.python.org/en/latest/specifications/binary-distribution-format/):
//     the file name `{distribution}-{version}(-{build tag})?-{python tag}-{abi tag}-{platform
//     tag}.whl`; one `{distribution}-{version}.dist-info/` folder holding WHEEL (`Wheel-Version`
//     1.x, `Root-Is-Purelib`) and RECORD; the `{distribution}-{version}.data/<scheme>/` folders
//     spread to the scheme paths; `#!python` in scripts rewritten to the environment's python.
//   PEP 376 / PEP 627 (the "Recording installed projects" specification): the installed
//     dist-info gets INSTALLER (`envlock`), REQUESTED, and a RECORD listing every installed file
//     as `path,sha256=<urlsafe base64 without padding>,size`, paths relative to site-packages,
//     the RECORD itself as `path,,`.
//   PEP 610 (the "Recording the direct URL origin" specification): direct_url.json when the
//     wheel came from a URL or path rather than an index.
//   Entry points (the "Entry points specification"): `console_scripts` and `gui_scripts` of
//     `entry_points.txt` become scripts in bin/.
//
// The peer followed byte for byte is pypa/installer (Debian's python3-installer, what pip's
// successors build on): its script template, its shebang for short paths, its RECORD row order
// (entry-point scripts, then the wheel's members in central-directory order, then the generated
// metadata, then RECORD) and its RECORD validation (WheelFile.validate_record: every member but
// RECORD, RECORD.jws and RECORD.p7s listed with a sha256 and a size that match). Where an
// interpreter path is too long for a `#!` line or holds a blank, envlock writes conda's /bin/sh
// exec trampoline (python_shebang(), envlock/install.hpp) for entry points and for `#!python`
// scripts alike, as it does for conda entry points. docs/pypi.md lists every choice and the peer
// it follows where installer, pip and uv differ.
//
// Layout (POSIX conda prefix, CPython's `posix_prefix` sysconfig scheme):
//   purelib, platlib  lib/pythonX.Y/site-packages
//   scripts           bin
//   headers           include/pythonX.Y/<distribution as the file name spells it>
//   data              the prefix itself
//
// Untrusted input: every member name is checked before anything is written for it. Refused
// (ErrorKind::Integrity, `where` the wheel's path, the member named): absolute names, a drive
// letter, a backslash, empty, `.` or `..` components; symbolic links, devices, FIFOs, sockets;
// a member listed twice; a `.data/` member outside the five schemes; an entry point whose name
// is not a plain file name; members past ExtractLimits' caps (read_zip(), envlock/extract.hpp).

#include <cstdint>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "envlock/extract.hpp"  // ExtractLimits
#include "envlock/result.hpp"

namespace envlock {

/// The parts of a wheel file name (PEP 427 "File name convention"), as spelled in it.
struct WheelFileName {
  std::string distribution;  ///< "setuptools", "typing_extensions" (not normalised)
  std::string version;       ///< "66.1.1"
  std::string build_tag;     ///< empty when absent; starts with a digit when present
  std::string python_tag;    ///< "py3", "cp311.cp312" (compressed tag sets kept as written)
  std::string abi_tag;       ///< "none", "cp311"
  std::string platform_tag;  ///< "any", "manylinux_2_17_x86_64"
};

/// Reads a wheel's file name (the last path component of `file_name`; `.whl` required): five or
/// six `-`-separated fields, a build tag starting with a digit. ErrorKind::Parse naming the file
/// name otherwise.
Result<WheelFileName> parse_wheel_file_name(std::string_view file_name);

/// The environment a wheel is to run in, for its compatibility tags.
struct WheelTarget {
  std::string platform;   ///< conda subdir: "linux-64", "linux-aarch64", "osx-arm64", "win-64"
  std::string python_xy;  ///< CPython "3.11" (the locked python); empty: python and ABI tags not checked
  std::string glibc;      ///< the host's glibc "2.36" (__glibc); empty: no glibc, manylinux refused
};

/// "linux-64 / CPython 3.11 / glibc 2.36", as errors name a target.
std::string describe_wheel_target(const WheelTarget& target);

/// Whether CPython `python_xy` on `platform` can run the wheel: one triple of its (compressed,
/// `.`-separated) tag sets is among those packaging.tags.sys_tags() gives there (the packaging
/// "Platform compatibility tags" specification, PEP 425, PEP 600, PEP 656), which pip and uv
/// install and nothing else:
///   python/ABI  cpXY-cpXY, cpXY-abi3, cpXY-none for the target's XY; cpXW-abi3 for 3.2 <= XW < XY;
///               pyXY, pyX, pyXW (W < Y) with ABI none;
///   platform    any; on linux-<arch> `linux_<arch>`, manylinux1 (2.5), manylinux2010 (2.12),
///               manylinux2014 (2.17) and manylinux_X_Y for X.Y up to the host glibc (none without
///               glibc); musllinux_X_Y is refused (envlock targets glibc hosts); on osx-64
///               macosx_*_{x86_64,intel,universal,universal2}, on osx-arm64 macosx_*_{arm64,universal2}
///               (the macOS version is not compared); win-64 win_amd64, win-32 win32, win-arm64 win_arm64.
bool wheel_tags_supported(const WheelFileName& name, const WheelTarget& target);

/// Where each of the five wheel schemes goes, as prefix-relative '/'-separated folders ("" is the
/// prefix itself).
struct WheelScheme {
  std::string purelib;
  std::string platlib;
  std::string headers;
  std::string scripts;
  std::string data;
};

/// The scheme of a POSIX conda prefix for CPython `python_xy` ("3.11") and a wheel of
/// `distribution` (headers go to `include/python3.11/<distribution>`, as pypa/installer's CLI and
/// distutils place them).
WheelScheme conda_wheel_scheme(std::string_view python_xy, std::string_view distribution);

/// The Python version of the prefix at local path `prefix`: "X.Y" of its one
/// `lib/pythonX.Y/site-packages` folder, or, when it has none (a python package that makes no
/// site-packages, as the fixture channel's stand-in), of its one `bin/pythonX.Y`.
/// ErrorKind::Usage when there is none or more than one (pass WheelInstallOptions::python_xy then).
Result<std::string> prefix_python_xy(const std::filesystem::path& prefix);

/// PEP 610 origin of a wheel installed from a URL or local path instead of an index.
struct DirectUrl {
  std::string url;     ///< "https://host/pkg-1.0-py3-none-any.whl" or "file:///abs/pkg.whl", credential-free
  std::string sha256;  ///< the archive's sha256 (lower-case hex), empty when unknown
};

/// The text of direct_url.json for `origin`, as pip writes it (json.dumps(sort_keys=True): `", "`
/// and `": "` separators, non-ASCII escaped, no newline at the end): `{"archive_info": {"hash":
/// "sha256=<hex>", "hashes": {"sha256": "<hex>"}}, "url": "<url>"}`, `archive_info` empty when
/// the hash is unknown.
std::string direct_url_json(const DirectUrl& origin);

/// Whether the installed distribution is marked as asked for by the user (PEP 376 REQUESTED) or
/// only pulled in as a dependency.
enum class Requested : bool { No, Yes };

/// The prefix-relative paths conda records own (every `files` entry of conda-meta/*.json), each
/// with the dist name of its record ("python-3.11.7-0").
using CondaOwnedFiles = std::unordered_map<std::string, std::string>;

/// Reads the CondaOwnedFiles of `prefix` (read_conda_meta(), envlock/package_record.hpp); none
/// when it has no conda-meta/ folder. An unreadable record is an error naming it (ErrorKind::Parse).
Result<CondaOwnedFiles> conda_owned_files(const std::filesystem::path& prefix);

/// How install_wheel() installs.
struct WheelInstallOptions {
  /// The environment's Python "X.Y"; empty: prefix_python_xy() of the prefix.
  std::string python_xy;
  /// The path the prefix has when it runs (written into shebangs); empty: the prefix as given to
  /// install_wheel(). Differs when the prefix is built in one place and moved to another.
  std::string target_prefix;
  /// The interpreter scripts run; empty: `<target_prefix>/bin/python<python_xy>`, the file conda
  /// entry points name.
  std::string interpreter;
  /// INSTALLER's first line (PEP 376: the tool's name).
  std::string installer = "envlock";
  Requested requested = Requested::Yes;
  /// Written as direct_url.json when set (PEP 610).
  std::optional<DirectUrl> direct_url;
  /// The wheel file's sha256 (lower-case hex), written as `<dist-info>/ENVLOCK_SHA256` (one line)
  /// when set, envlock's record of which build of the version is installed, as conda-meta records
  /// an archive's sha256 (PEP 376 lets an installer add its own files; listed in RECORD); empty:
  /// not written (installed_wheel_sha256()).
  std::string archive_sha256;
  /// Caps on the archive (entries, total content), as for conda packages.
  ExtractLimits limits;
  /// The prefix-relative `.dist-info` folder of an installed distribution this wheel replaces
  /// (another version of it); empty for none. Every file its RECORD lists is moved aside before
  /// the new files move in, put back when the install fails, and deleted with the folders it
  /// leaves empty when it succeeds (as pip uninstalls the old version, but all or nothing).
  /// A RECORD row that leads outside the prefix is refused (ErrorKind::Integrity) before anything
  /// moves. A row naming what the installer never writes — the environment's records
  /// (`conda-meta/`), envlock's own files (`.envlock-*`), a file a conda record lists (`files` of
  /// a conda-meta/*.json) — is left in place and named in InstalledWheel::left_in_place.
  std::string replaces;
  /// With `replaces`: the files conda records own (conda_owned_files() of the prefix), read once
  /// for many installs; nullptr: read from the prefix's conda-meta when a version is replaced.
  const CondaOwnedFiles* conda_files = nullptr;
  /// Installs running in parallel into one prefix share one mutex here: their step 4 (checking
  /// the prefix, moving in, and putting back on failure) runs under it, one at a time, so that no
  /// install undoes a move into a folder another one has just merged into. The unpacking (steps
  /// 1-3, nearly all the time) runs in parallel. nullptr for an install on its own.
  std::mutex* commit_lock = nullptr;
  /// The unpacked-wheel cache (uv's archive cache; docs/pypi.md "The unpacked-wheel cache"):
  /// empty: none, every member is written from the .whl. Otherwise the wheel is unpacked once into
  /// `<unpacked_cache>/<sha256>/` (the wheel's sha256: archive_sha256, else hashed here), every
  /// member checked against RECORD while it is written, and the entry renamed into place whole;
  /// an install then hard-links the members from it into the staging folder (copies them where
  /// the cache is on another file system, or where a cached file's mode is not the one the install
  /// writes) and writes as new files only what is the prefix's: `#!python` scripts, entry points,
  /// INSTALLER, REQUESTED, direct_url.json, ENVLOCK_SHA256 and RECORD. The installed tree and
  /// RECORD are those of an install without the cache, byte for byte. An entry is used only when
  /// each of its files exists with its recorded size (and executable bit); a damaged one is
  /// unpacked again from the wheel. A cache that cannot be written is not used.
  std::filesystem::path unpacked_cache;
  /// With unpacked_cache: each cached file's sha256 is compared with its record on every reuse
  /// too (reads every byte), as `--extra-safety-checks` checks a conda package's files.
  bool verify_unpacked_hashes = false;
};

/// One file install_wheel() wrote, as its RECORD lists it.
struct InstalledWheelFile {
  std::string path;         ///< prefix-relative, '/'-separated ("bin/wheel", "lib/python3.11/site-packages/wheel/__init__.py")
  std::string record_path;  ///< as RECORD writes it, relative to site-packages ("../../../bin/wheel")
  std::string sha256;       ///< lower-case hex; empty for RECORD itself
  std::uint64_t size = 0;   ///< bytes (RECORD itself: its size, though RECORD lists none)
};

/// What install_wheel() installed.
struct InstalledWheel {
  std::string name;       ///< the distribution as the wheel's file name spells it
  std::string version;
  std::string dist_info;  ///< prefix-relative `.dist-info` folder
  std::vector<InstalledWheelFile> files;  ///< in RECORD's order, RECORD last
  /// What the replaced version's RECORD listed that was left in place (WheelInstallOptions::
  /// replaces), each with why: "bin/python3.11 (a file of conda package python-3.11.7-0)",
  /// "conda-meta/x.json (the environment's records)", ".envlock-x (envlock's own file)".
  std::vector<std::string> left_in_place;
};

/// The sha256 of the wheel a distribution was installed from, as recorded in its `.dist-info`
/// folder `dist_info` (a local path): envlock's ENVLOCK_SHA256, else PEP 610 direct_url.json's
/// `archive_info.hashes.sha256` (`archive_info.hash` `sha256=`), as pip and uv write it for URL
/// installs; empty when neither records one (an index install by pip or uv), or when what it
/// records is not 64 hex digits. Each file is read as every input is (read_input_file(): a regular
/// file, never a FIFO or a link into /proc; at most 256 bytes and 1 MiB).
std::string installed_wheel_sha256(const std::filesystem::path& dist_info);

/// Removes the staging folders (`.envlock-wheel-<pid>-<n>`, and `<that>.old` of a replaced version's
/// files) that install_wheel() runs killed mid-way left in `prefix`, those whose pid is not a live
/// process (kill(pid, 0) fails with ESRCH); never follows a link. Returns their names, sorted.
std::vector<std::string> remove_stale_wheel_staging(const std::filesystem::path& prefix);

/// Removes the installed distribution whose prefix-relative `.dist-info` folder is `dist_info`
/// from `prefix` (a conda prefix of CPython `python_xy`), as `pip uninstall` does (pip's
/// req_uninstall: RECORD-driven): every file its RECORD lists, and for each `.py` file its
/// bytecode in `__pycache__` (`<stem>.cpython-XY.pyc`, `.opt-1`, `.opt-2`), then the folders they
/// leave empty — never a scheme folder (site-packages, bin, include/pythonX.Y, the prefix). Every
/// row is resolved beneath the prefix (as WheelInstallOptions::replaces): a row that leads outside
/// it, or through a link out of it, is refused before anything is removed (ErrorKind::Integrity);
/// the files move aside into `.envlock-wheel-<pid>-<n>.old` first, so a failure puts them back.
/// A row naming what the installer never writes — the environment's records (`conda-meta/`),
/// envlock's own files (`.envlock-*`), a file a conda record lists — is left in place and named,
/// as WheelInstallOptions::replaces leaves it (pip trusts RECORD and would delete it).
/// Errors: ErrorKind::Io (no readable RECORD, cannot move), ErrorKind::Parse (a RECORD row that
/// cannot be read), ErrorKind::Integrity.
struct UninstalledDistribution {
  std::size_t files = 0;  ///< how many files were removed
  /// What its RECORD listed that was left in place, each with why, as InstalledWheel::left_in_place:
  /// "bin/python3.11 (a file of conda package python-3.11.7-0)".
  std::vector<std::string> left_in_place;
};
Result<UninstalledDistribution> uninstall_distribution(const std::filesystem::path& prefix, const std::string& dist_info,
                                                       const std::string& python_xy);

/// Installs the wheel at local path `wheel` into the existing prefix folder `prefix`:
///   1. reads WHEEL (Wheel-Version 1.x), RECORD and entry_points.txt from the one top-level
///      `.dist-info` folder, whose name must be the file name's distribution (PEP 503 normalised);
///   2. writes every member into a staging folder inside the prefix (`.envlock-wheel-<pid>-<n>`),
///      hashing it as it is written and checking its sha256 and size against RECORD; scripts
///      starting with `#!python` get python_shebang(interpreter) as their first line; members
///      with an executable bit get mode 0755 (after the umask), others 0644;
///   3. writes the console and GUI entry-point scripts (pypa/installer's template), INSTALLER,
///      direct_url.json when asked, REQUESTED when Requested::Yes, and RECORD;
///   4. moves the staged tree into the prefix with renameat2(RENAME_NOREPLACE), whole folders
///      where the prefix has none of that name yet, after checking that no file of it exists in
///      the prefix. A file that appears meanwhile stops the move and every entry moved so far is
///      moved back: the prefix ends as it was.
///   With WheelInstallOptions::replaces, the old version's files are moved aside before step 4.
/// On any failure the staging folder is removed and the prefix is unchanged.
/// Errors: ErrorKind::Parse (a bad file name, WHEEL, RECORD row or entry_points.txt, naming the
/// wheel and the member, with ":line" for RECORD), ErrorKind::Integrity (an unsafe or unlisted
/// member, a hash or size that does not match RECORD — naming the member, the expected and the
/// actual digest and size —, no or several .dist-info folders, a corrupt archive, a cap passed),
/// ErrorKind::Incompatible (Wheel-Version not 1.x), ErrorKind::Io (a file the wheel installs is
/// already in the prefix, naming it; cannot write), ErrorKind::Usage (no python version known).
Result<InstalledWheel> install_wheel(const std::filesystem::path& wheel, const std::filesystem::path& prefix,
                                     const WheelInstallOptions& options = {});

}  // namespace envlock
