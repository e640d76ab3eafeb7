#pragma once
// envlock/record_url.hpp — whether a package record's URL names the archive the record says it is.
//
// An installer downloads a record's URL; `envlock show` and `envlock diff` print its name,
// version and build. A lockfile whose entry says zlib 1.3.1 while its URL names
// zlib-1.2.13-hd590300_5.conda (or hides `%2F..%2F` in a segment that a decoding server resolves
// to another file) is shown as one package and installed as another. Every lockfile reader applies
// these two checks, envlock.lock (Lockfile::parse) and the readers of conda-lock.yml, pixi.lock and
// @EXPLICIT files (envlock/readers.hpp) alike (issue 17, M4 and D2; docs/review.md, "Records that
// disagree with their URL"). The peers check neither: conda-lock keeps `version` as a plain string
// beside `url` (conda_lock/lockfile/v1/models.py), rattler_lock lets a written name/version/build
// win over the URL's file name (crates/rattler_lock/src/parse/models/v6/conda_package_data.rs),
// and conda, mamba and pixi download the URL as written.

#include <optional>
#include <string>
#include <string_view>

#include "envlock/package_record.hpp"

namespace envlock {

/// The first path segment of `url` (after the authority, before `?` or `#`; the whole text for a
/// relative path) that percent-decodes to something holding '/' or '\', or to '.' or '..', as
/// written (`zlib-1.2.11-h0_1.tar.bz2%2F..%2Fzlib-1.2.8-h0_0.tar.bz2`, `%2e%2e`); nullopt when
/// there is none. Servers that decode the path before resolving it (python -m http.server,
/// nginx's static handler) serve another file than the one the URL seems to name; no tool writes
/// such a URL (conda, conda-lock, pixi and envlock encode no '/').
std::optional<std::string> encoded_path_segment(std::string_view url);

/// The archive file name a URL names: its last path segment without query or fragment,
/// percent-decoded (RFC 3986: pixi writes `%2B` for `+`).
std::string url_file_name(std::string_view url);

/// Where a record disagrees with the archive file it names.
struct RecordFileMismatch {
  std::string key;       ///< "name", "version" or "build": the record's field that disagrees
  std::string recorded;  ///< the record's value
  std::string in_file;   ///< the file name's value
};

/// The first of `name`, `version`, `build` in which `record` disagrees with `file_name`
/// (name-version-build.conda|.tar.bz2, parse_archive_name); nullopt when they agree or when
/// `file_name` is no archive name (a pixi source package, a URL without one). The name compares
/// case-blind (records hold it lower-cased), versions as conda orders them (`1.3.01` is `1.3.1`),
/// build strings exactly.
std::optional<RecordFileMismatch> record_file_mismatch(const PackageRecord& record, std::string_view file_name);

}  // namespace envlock
