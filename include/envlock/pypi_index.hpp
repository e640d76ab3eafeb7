#pragma once
// envlock/pypi_index.hpp — Python package indexes as the resolver (envlock/pypi_resolve.hpp)
// reads them: the simple repository API and find-links locations.
//
// Standards followed:
//   PEP 503  the simple repository API's HTML: `<index>/<normalised name>/` lists one `<a>` per
//            file, its href the file's URL with `#sha256=<hex>`, `data-requires-python` (PEP 345
//            specifier, HTML-escaped), `data-yanked` (PEP 592);
//   PEP 691  the same in JSON (`application/vnd.pypi.simple.v1+json`): `files[]` with `filename`,
//            `url`, `hashes`, `requires-python`, `yanked`, `size` (PEP 700); asked for with the
//            Accept header pip sends, and told apart from HTML by its first byte;
//   PEP 658 / 714  `data-dist-info-metadata` / `data-core-metadata` (JSON `dist-info-metadata`,
//            `core-metadata`): the wheel's METADATA is at `<file URL>.metadata`, so the resolver
//            reads a few KB instead of the wheel;
//   pip's `--find-links`: a folder (its `*.whl` files) or the URL of an HTML page whose anchors
//            name files (any project).
// Index URLs may carry credentials (`https://user:token@host/simple`) as channel URLs do
// (docs/manifest.md): they are fetched with them, and every URL handed out for the lockfile or a
// message goes through redact_url() (envlock/url.hpp). Fetching goes through envlock/fetch.hpp.

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "envlock/fetch.hpp"
#include "envlock/result.hpp"

namespace envlock {

/// One distribution file an index lists.
struct PypiFile {
  std::string filename;         ///< `numpy-1.26.4-cp311-cp311-manylinux_2_17_x86_64.whl`
  std::string url;              ///< absolute, fragment removed; may carry the index's credentials
  std::string sha256;           ///< lower-case hex; empty when the index gives none
  std::string requires_python;  ///< the PEP 440 specifier as listed, unescaped; may be empty
  bool yanked = false;          ///< PEP 592
  bool has_metadata = false;    ///< PEP 658/714: `<url>.metadata` serves the METADATA
  std::string metadata_sha256;  ///< that file's sha256 when the index gives it
  std::optional<std::uint64_t> size;  ///< PEP 700 `size`; a local file's size
  std::string index;            ///< the index URL or find-links location it was listed by (as configured)
};

/// The files of a PEP 503 HTML page fetched from `page_url` (relative hrefs resolved against it
/// by resolve_url(), envlock/url.hpp; `<base href>` honoured). Anchors whose href has no file
/// name are skipped. Never fails on HTML it cannot make sense of: it lists what it can read.
std::vector<PypiFile> parse_simple_html(std::string_view html, const std::string& page_url);

/// The files of a PEP 691 JSON page. Errors: ErrorKind::Parse (not JSON, no `files` list, a
/// `meta.api-version` whose major version is not 1), `where` = page_url redacted.
Result<std::vector<PypiFile>> parse_simple_json(std::string_view json, const std::string& page_url);

/// The fields of a core metadata file (PEP 566 / 643: METADATA, PKG-INFO) the resolver reads.
struct CoreMetadata {
  std::string name, version, requires_python;
  std::vector<std::string> requires_dist;   ///< in file order
  std::vector<std::string> provides_extra;  ///< in file order
};
/// Reads RFC 822 headers up to the first blank line; continuation lines are joined.
/// Errors: ErrorKind::Parse when Name or Version is missing.
Result<CoreMetadata> parse_core_metadata(std::string_view text, const std::string& where);

/// Where a lock looks for PyPI files.
struct PypiSources {
  std::vector<std::string> indexes;     ///< simple-API base URLs, primary first (may carry credentials)
  std::vector<std::string> find_links;  ///< absolute folders or http(s)/file URLs of HTML pages
};

struct PypiIndexOptions {
  std::filesystem::path cache_dir;  ///< pages and metadata are kept under it; empty: cache_root()/pypi
  bool offline = false;             ///< read the copies kept under cache_dir only
  FetchOptions fetch;
};

/// The files every source lists for a project, and the metadata of a wheel; each page and
/// metadata file is fetched once per PypiIndex (thread-safe). A name's files from every source are
/// merged as pip merges `--index-url`, `--extra-index-url` and `--find-links` (no source hides
/// another's); a file name listed twice is kept from the first source.
class PypiIndex {
 public:
  PypiIndex(PypiSources sources, PypiIndexOptions options);
  /// Errors: ErrorKind::Network (a page that cannot be fetched: 404 is no error, the project is
  /// just not there), ErrorKind::Parse (a JSON page that cannot be read).
  Result<std::vector<PypiFile>> files(const std::string& normalized_name);
  /// The METADATA of wheel `file`: `<url>.metadata` when the index serves it, else from the
  /// wheel itself, downloaded (sha256 checked) into the wheel cache `<cache>/wheels/<sha256>/`
  /// that `envlock install` reads. Errors: Network, Integrity (hash mismatch), Parse.
  Result<CoreMetadata> metadata(const PypiFile& file);
  [[nodiscard]] const PypiSources& sources() const { return sources_; }
  /// Pages and files fetched over the network so far (for tests and the design doc's costs).
  [[nodiscard]] std::size_t requests() const { return requests_; }

 private:
  Result<std::vector<PypiFile>> index_page(const std::string& index, const std::string& name);
  Result<std::vector<PypiFile>> find_links_files(const std::string& location);
  Result<std::string> fetch_text(const std::string& url, const std::string& accept, bool missing_ok, bool& missing);
  PypiSources sources_;
  PypiIndexOptions options_;
  std::mutex mutex_;
  std::map<std::string, std::vector<PypiFile>> files_;
  std::map<std::string, std::vector<PypiFile>> find_links_;
  std::map<std::string, CoreMetadata> metadata_;
  std::size_t requests_ = 0;
};

}  // namespace envlock
