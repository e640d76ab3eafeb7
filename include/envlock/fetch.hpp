#pragma once
// envlock/fetch.hpp — downloads over http(s):// and file:// into files, verified while streaming.
//
// The one place envlock transfers bytes (libcurl lives only in src/fetch; no libcurl type crosses
// this header). Every download:
//   * lands in `<destination>.partial` and is renamed onto `destination` only after the size and
//     the digest match (sha256 preferred; md5 only when no sha256 is expected) — a killed process or
//     a failed check never leaves a file at `destination`;
//   * is hashed while the bytes arrive (OpenSSL EVP, see envlock/hash.hpp), never re-read;
//   * resumes a `.partial` left by an earlier attempt or process with an HTTP Range request
//     (RFC 9110 §14) when the server answers 206, and restarts from zero when it does not; a
//     request with no sha256/md5 resumes only with the validators (strong ETag, Last-Modified,
//     length) of the answer that began the `.partial`, kept in `<destination>.partial.validators`
//     and sent as If-Range: a 200 answer (the file changed) restarts from zero in that answer, a
//     206 of another version restarts; none kept, no resume (docs/cache.md, "Downloads");
//   * is retried with exponential backoff on transient failures (connection refused/reset/dropped,
//     timeouts, HTTP 408, 425, 429, 500, 502, 503, 504); never on 4xx client errors or digest
//     mismatches (a mismatch deletes the `.partial` so the next attempt starts clean);
//   * takes credentials from `user:pass@` or `/t/<token>/` in the URL, else from the credentials
//     file (envlock/credentials.hpp: BearerToken, BasicHTTP, CondaToken by host, `*.domain` or
//     URL prefix), else from ~/.netrc (or FetchOptions::netrc_file) through libcurl's own netrc
//     support; libcurl sends them to the URL's host only: a redirect to another host goes
//     without them (CURLOPT_UNRESTRICTED_AUTH stays off). Every URL that reaches an Error, a
//     FetchResult or a progress callback goes through redact_url() (envlock/url.hpp), and
//     libcurl's own messages through redact_text(), so nothing secret is printed;
//   * may be sent elsewhere than its URL says: FetchOptions::url_prefixes maps a URL prefix (a
//     channel as a lockfile records it) to another (the same channel with its credentials, or a
//     mirror of it); messages then name the URL actually fetched, redacted;
//   * honours libcurl's proxy variables (http_proxy, https_proxy, ALL_PROXY, no_proxy) and, for
//     TLS, FetchOptions::ca_bundle (or the system's trust store).
//
// Conditional requests (RFC 9110 §13) for repodata: set FetchRequest::if_none_match (an ETag) and/or
// if_modified_since (a Last-Modified value, sent verbatim); a 304 answer leaves `destination`
// untouched and returns FetchResult::not_modified = true.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "envlock/result.hpp"

namespace envlock {

/// Whether the server may send a compressed representation (HTTP Content-Encoding).
enum class AcceptEncoding : bool {
  Identity,  ///< bytes exactly as stored (package archives; allows resume with Range)
  Any,       ///< gzip/deflate/br/zstd decoded by libcurl (repodata.json); resume is disabled and
             ///< size/digest are checked on the decoded bytes
};

/// One file to download.
struct FetchRequest {
  std::string url;                        ///< http://, https:// or file:// (may hold user:pass@);
                                          ///< a file:// URL goes to libcurl as
                                          ///< file_url_from_path(path_from_file_url(url)), so a
                                          ///< raw space works; a host other than localhost is
                                          ///< ErrorKind::Usage (envlock/url.hpp)
  std::filesystem::path destination;      ///< final path; its parent directory must exist
  std::string sha256;                     ///< expected digest, hex (any case); empty = not checked
  std::string md5;                        ///< expected digest, hex; checked only when sha256 empty
  std::optional<std::uint64_t> size;      ///< expected size in bytes; nullopt = not checked
  std::string if_none_match;              ///< ETag from an earlier response; sent as If-None-Match
  std::string if_modified_since;          ///< Last-Modified from an earlier response, verbatim
  AcceptEncoding accept_encoding = AcceptEncoding::Identity;
  /// Sent as the Accept header when set (a PyPI simple index's PEP 691 content negotiation:
  /// `application/vnd.pypi.simple.v1+json, text/html;q=0.1`); empty: libcurl's `*/*`.
  std::string accept;
  std::string label;                      ///< shown in progress and errors (e.g. the package's
                                          ///< file name); defaults to the URL's last segment
};

/// What a successful download produced.
struct FetchResult {
  std::filesystem::path path;        ///< == request.destination
  std::string url;                   ///< the URL fetched, redacted (after redirects)
  long http_status = 0;              ///< final HTTP status (200, 206, 304); 0 for file://
  bool not_modified = false;         ///< true on 304: destination untouched, digests empty
  std::string etag;                  ///< response ETag header, verbatim (quotes kept); may be empty
  std::string last_modified;         ///< response Last-Modified header, verbatim; may be empty
  std::string cache_control;         ///< response Cache-Control header, verbatim; may be empty
  std::uint64_t size = 0;            ///< bytes in the final file
  std::string sha256;                ///< lower-case hex SHA-256 of the final file (always computed)
  std::string md5;                   ///< lower-case hex MD5 of the final file; computed only when
                                     ///< the request expected an md5 and no sha256
  unsigned attempts = 0;             ///< transfers started (1 = no retry)
  std::uint64_t resumed_from = 0;    ///< bytes taken over from an existing .partial (0 = none)
};

/// A snapshot of a batch's progress, for a TTY display or plain log lines.
struct FetchProgress {
  std::size_t files_total = 0;        ///< requests in the batch
  std::size_t files_done = 0;         ///< finished (successfully or not)
  std::size_t files_failed = 0;       ///< of files_done, how many failed
  std::size_t files_active = 0;       ///< transfers running now
  std::uint64_t bytes_done = 0;       ///< bytes received so far (all files, resumed bytes included)
  std::uint64_t bytes_total = 0;      ///< sum of known sizes (expected size or Content-Length);
                                      ///< a lower bound while some sizes are unknown
  double bytes_per_second = 0;        ///< recent transfer rate (bytes/s), smoothed
  std::string current;                ///< label of the running transfer that last made progress
                                      ///< (the first running one while none has bytes yet)
  std::string current_url;            ///< that transfer's URL, redacted
};

/// Called from the thread running fetch_all, at most about ten times a second and once when the
/// batch ends. It must not call back into fetch functions.
using FetchProgressCallback = std::function<void(const FetchProgress&)>;

/// Connections kept from one batch to the next. Batches whose FetchOptions::session is the same
/// session run on one libcurl multi handle that outlives them, so a later batch reuses the
/// connections (and DNS answers) an earlier one opened, and one libcurl share handle keeps TLS
/// sessions for new connections to the same host. A batch-by-batch walk (CEP-16 shards: one
/// batch per step of the dependency walk) then pays connection set-up once, not once per step.
/// One batch at a time uses a session; a batch started on another thread while it is busy runs
/// on connections of its own (as without a session), never waits. Opaque: libcurl's types stay
/// in src/fetch.
class FetchSession;

/// A new session (no connection is opened until a batch runs on it).
std::shared_ptr<FetchSession> make_fetch_session();

/// Knobs for a batch; the defaults suit a package install. The environment overrides them for
/// every batch (so CI can tune any command): ENVLOCK_CONNECT_TIMEOUT (seconds, connect_timeout,
/// default 30), ENVLOCK_READ_TIMEOUT (seconds a transfer may stay below the low-speed limit
/// before it is aborted and retried: low_speed_time, default 60), ENVLOCK_LOW_SPEED_LIMIT
/// (bytes/s, low_speed_limit, default 30), ENVLOCK_MAX_TIME (seconds, max_time, default none),
/// ENVLOCK_RETRIES (max_retries, default 4; repodata 3), ENVLOCK_CA_BUNDLE (ca_bundle when not
/// set). Values that are not whole numbers are ignored (network_environment_problems() names
/// them). NetworkSettings win over both.
struct FetchOptions {
  std::size_t parallel = 8;                          ///< concurrent transfers (>= 1)
  unsigned max_retries = 4;                          ///< retries after the first attempt
  std::chrono::milliseconds retry_base_delay{250};   ///< backoff: base * 2^(attempt-1), capped
  std::chrono::milliseconds retry_max_delay{8000};   ///< cap of one backoff wait
  std::chrono::seconds connect_timeout{30};          ///< per connection attempt
  /// A transfer slower than low_speed_limit bytes/s for low_speed_time is aborted (then retried):
  /// libcurl's CURLOPT_LOW_SPEED_LIMIT/TIME with libmamba's values (30 bytes/s for 60 s), so a
  /// server that drips a byte a second fails instead of holding the command forever.
  std::uint64_t low_speed_limit = 30;
  std::chrono::seconds low_speed_time{60};
  /// The most one file may take, every attempt and backoff wait together (CURLOPT_TIMEOUT_MS of
  /// what is left, as curl's --max-time bounds one transfer); past it the file fails, not
  /// retried, naming the limit. 0: none (libmamba sets no overall timeout either).
  std::chrono::seconds max_time{0};
  bool use_netrc = true;                             ///< read credentials from netrc (optional)
  std::filesystem::path netrc_file;                  ///< empty: $NETRC, else ~/.netrc
  /// Apply the credentials file (envlock/credentials.hpp). A file that cannot be read or parsed
  /// fails every request of the batch with its error (ErrorKind::Parse or Io, naming the file).
  bool use_credentials_file = true;
  std::filesystem::path credentials_file;            ///< empty: $ENVLOCK_AUTH_FILE, else the default
  /// (from, to) URL prefixes, first match wins: a request for `from` or `from/...` fetches
  /// `to` + the rest instead (`to` may carry credentials). Trailing slashes are ignored.
  std::vector<std::pair<std::string, std::string>> url_prefixes;
  /// PEM file of CA certificates for https (CURLOPT_CAINFO); empty: libcurl's default.
  std::filesystem::path ca_bundle;
  std::string user_agent;                            ///< empty: "envlock/<version>"
  /// Bytes a download whose FetchRequest::size is not set may have (its body, decoded): past it
  /// the transfer stops, nothing is kept, and the error names the cap (ErrorKind::Integrity,
  /// not retried). A Content-Length over the cap is refused at the first byte. nullopt:
  /// $ENVLOCK_MAX_DOWNLOAD_SIZE, else kDefaultMaxUnknownDownload (see unknown_size_cap()).
  std::optional<std::uint64_t> max_unknown_size;
  FetchProgressCallback on_progress;                 ///< optional
  /// Keep connections across the batches that share it (make_fetch_session()); null: each
  /// batch opens its own and closes them when it ends.
  std::shared_ptr<FetchSession> session;
};

/// Network settings given on the command line (`--connect-timeout`, `--read-timeout`,
/// `--low-speed-limit`, `--max-time`, `--retries`, `--ca-bundle`; src/cli/network_options.cpp).
/// Once set, they win over the environment variables above and over every FetchOptions' own
/// connect_timeout, low_speed_time, low_speed_limit, max_time, max_retries and ca_bundle, for
/// each batch the process runs afterwards (as uv's and pip's options win over their environment
/// variables). An unset field leaves the environment and FetchOptions in charge.
struct NetworkSettings {
  std::optional<std::chrono::seconds> connect_timeout;  ///< >= 1 s
  std::optional<std::chrono::seconds> read_timeout;     ///< low_speed_time; >= 1 s
  std::optional<unsigned> retries;                      ///< max_retries
  std::optional<std::uint64_t> low_speed_limit;         ///< bytes/s; >= 1
  std::optional<std::chrono::seconds> max_time;         ///< >= 1 s
  std::filesystem::path ca_bundle;                      ///< empty: not set
};

/// Sets the process's NetworkSettings (call before the first transfer; thread-safe).
void set_network_settings(const NetworkSettings& settings);

/// The network environment variables that are set but cannot be used, one message each
/// (`ENVLOCK_RETRIES='many' is not a whole number; ignored`); such a value is ignored by every
/// batch. The CLI prints them as warnings (uv warns and ignores the same way).
std::vector<std::string> network_environment_problems();

/// The default cap of a download of unknown size: 4 GiB (above the largest conda package and any
/// channel's repodata.json, decoded).
inline constexpr std::uint64_t kDefaultMaxUnknownDownload = 4ULL << 30;

/// The cap of downloads of unknown size for `options`: max_unknown_size, else
/// $ENVLOCK_MAX_DOWNLOAD_SIZE (bytes, or a number with K, M, G or T: powers of 1024), else
/// kDefaultMaxUnknownDownload. ErrorKind::Usage naming the variable when it does not parse; a
/// batch then fails every request without a size with that error.
Result<std::uint64_t> unknown_size_cap(const FetchOptions& options);

/// Downloads one file (a batch of one). Errors (Error::where is the redacted URL):
///   ErrorKind::Network   HTTP status >= 400, connection failures, timeouts (after retries);
///                        for an HTTP answer Error::http_status holds its status (e.g. 404 or
///                        410: the file is not on the server), 0 when no answer came;
///   ErrorKind::Integrity size or digest mismatch: message names expected and actual digest and
///                        size; nothing is left at destination or in `.partial`;
///   ErrorKind::Io        the destination cannot be written (no space, permission);
///   ErrorKind::Usage     an unsupported URL scheme or an empty URL/destination.
Result<FetchResult> fetch_to_file(const FetchRequest& request, const FetchOptions& options = {});

/// Downloads every request in parallel (libcurl multi, at most options.parallel at once).
/// Returns one result per request, in the order of `requests`. One failure does not stop the
/// others. Two requests with the same destination are a usage error for the second.
std::vector<Result<FetchResult>> fetch_all(const std::vector<FetchRequest>& requests,
                                           const FetchOptions& options = {});

/// The path a download is written to before it is verified: `<destination>.partial`.
std::filesystem::path partial_path(const std::filesystem::path& destination);

}  // namespace envlock
