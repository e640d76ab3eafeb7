// fetch.cpp — fetch_all over libcurl multi: parallel transfers into `.partial` files, hashed while
// streaming, resumed with Range, retried with backoff, renamed only after verification.
// See envlock/fetch.hpp for the contract. libcurl is used here and nowhere else in envlock.
#include "envlock/fetch.hpp"

#include <curl/curl.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>

#include "envlock/atomic_file.hpp"
#include "envlock/build_info.hpp"
#include "envlock/credentials.hpp"
#include "envlock/hash.hpp"
#include "envlock/settings.hpp"
#include "envlock/text.hpp"
#include "envlock/url.hpp"
#include "curl_api.hpp"

namespace envlock {
namespace {

using Clock = std::chrono::steady_clock;

/// libcurl's entry points; Batch::run() has checked that they are bound before any handle exists.
const detail::CurlApi& lc() { return *detail::curl_api(nullptr); }

struct EasyDeleter {
  void operator()(CURL* c) const { lc().easy_cleanup(c); }
};
struct MultiDeleter {
  void operator()(CURLM* m) const { lc().multi_cleanup(m); }
};
struct SlistDeleter {
  void operator()(curl_slist* s) const { lc().slist_free_all(s); }
};
struct ShareDeleter {
  void operator()(CURLSH* s) const { lc().share_cleanup(s); }
};
using EasyHandle = std::unique_ptr<CURL, EasyDeleter>;
using MultiHandle = std::unique_ptr<CURLM, MultiDeleter>;
using HeaderList = std::unique_ptr<curl_slist, SlistDeleter>;
using ShareHandle = std::unique_ptr<CURLSH, ShareDeleter>;

}  // namespace

/// See envlock/fetch.hpp. The multi handle's connection cache and DNS cache carry over from one
/// batch to the next; the share handle holds TLS sessions (and DNS answers), locked per kind of
/// data because an easy handle may be cleaned up after its batch has let the session go.
class FetchSession {
 public:
  std::mutex busy;  ///< held by the batch running on the session
  std::array<std::mutex, CURL_LOCK_DATA_LAST> locks;
  ShareHandle share;  ///< made by the first batch (libcurl is bound by then); outlives `multi`
  MultiHandle multi;  ///< made by the first batch; closes the kept connections when destroyed
};

std::shared_ptr<FetchSession> make_fetch_session() { return std::make_shared<FetchSession>(); }

namespace {

void share_lock(CURL*, curl_lock_data data, curl_lock_access, void* userp) {
  auto* s = static_cast<FetchSession*>(userp);
  if (data >= 0 && data < CURL_LOCK_DATA_LAST) s->locks[static_cast<std::size_t>(data)].lock();
}

void share_unlock(CURL*, curl_lock_data data, void* userp) {
  auto* s = static_cast<FetchSession*>(userp);
  if (data >= 0 && data < CURL_LOCK_DATA_LAST) s->locks[static_cast<std::size_t>(data)].unlock();
}

/// Connections a session keeps open between batches (CURLMOPT_MAXCONNECTS).
constexpr long kSessionConnections = 32;

/// An owned file descriptor.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(Fd&& o) noexcept : fd_(o.release()) {}
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = o.release();
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  [[nodiscard]] int get() const { return fd_; }
  [[nodiscard]] bool valid() const { return fd_ >= 0; }
  int release() {
    int f = fd_;
    fd_ = -1;
    return f;
  }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

enum class Scheme { Http, File, Unsupported };

Scheme scheme_of(std::string_view url) {
  auto starts = [&](std::string_view prefix) {
    if (url.size() < prefix.size()) return false;
    for (std::size_t i = 0; i < prefix.size(); ++i) {
      char c = url[i];
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
      if (c != prefix[i]) return false;
    }
    return true;
  };
  if (starts("http://") || starts("https://")) return Scheme::Http;
  if (starts("file://")) return Scheme::File;
  return Scheme::Unsupported;
}

std::string last_segment(std::string_view url) {
  std::string_view u = url.substr(0, url.find_first_of("?#"));
  auto slash = u.rfind('/');
  return std::string(slash == std::string_view::npos ? u : u.substr(slash + 1));
}

std::string errno_text(int err) { return std::strerror(err); }

/// HTTP statuses worth another try (RFC 9110 §15.5.9, §15.6; RFC 6585 429; RFC 8470 425).
bool transient_status(long status) {
  return status == 408 || status == 425 || status == 429 || status == 500 || status == 502 ||
         status == 503 || status == 504;
}

/// libcurl failures worth another try: the network, not the request, was at fault.
bool transient_curl(CURLcode code) {
  switch (code) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_PARTIAL_FILE:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_HTTP3:
    case CURLE_QUIC_CONNECT_ERROR:
      return true;
    default:
      return false;
  }
}

std::string status_text(long status) {
  switch (status) {
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 408: return "Request Timeout";
    case 410: return "Gone";
    case 416: return "Range Not Satisfiable";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    default: return "";
  }
}

std::string size_text(std::uint64_t bytes) { return std::to_string(bytes) + " bytes"; }

/// State of one request across its attempts.
struct Transfer {
  std::size_t index = 0;
  const FetchRequest* req = nullptr;
  Scheme scheme = Scheme::Http;
  std::string label;
  std::string redacted;  // redact_url(req->url)
  std::string curl_url;  // what libcurl is given: req->url (rewritten by url_prefixes, with a
                         // CondaToken), a file:// URL in its encoded spelling
  std::optional<Credential> credential;  // from the credentials file
  std::optional<Error> bad_url;  // a file:// URL that names no local path
  std::string file_path;         // the local path a file:// URL names
  std::uint64_t unknown_size_cap = 0;  // bytes a download without FetchRequest::size may have
  bool cap_exceeded = false;           // on_body stopped the transfer at that cap
  std::filesystem::path partial;
  std::filesystem::path validators;  // partial_validators_path(): the first answer's validators

  // Per attempt.
  EasyHandle easy;
  HeaderList headers;
  std::array<char, CURL_ERROR_SIZE> errbuf{};
  Fd fd;
  std::optional<Hasher> sha;
  std::optional<Hasher> md5;
  std::uint64_t written = 0;        // bytes now in the .partial file
  std::uint64_t resumed_from = 0;   // bytes taken over at the start of this attempt
  bool resume_requested = false;
  std::optional<std::uint64_t> content_length;  // of this response's body
  std::string etag, last_modified, cache_control, retry_after;
  long response_status = 0;           // of the response whose headers are arriving
  std::string content_range;          // its Content-Range, verbatim
  std::string location;               // its Location, verbatim (a redirect's target)
  std::optional<std::uint64_t> header_length;  // its Content-Length header
  std::string kept_etag, kept_last_modified;   // validators of the .partial (read at start)
  std::optional<std::uint64_t> kept_length;    // total length of the file the .partial begins
  bool resume_mismatch = false;       // a 206 answer is of another version: restart from zero
  std::optional<Error> abort_error;  // set by a callback that stopped the transfer

  // Across attempts.
  unsigned attempts = 0;
  bool restart_from_zero = false;  // drop any .partial before the next attempt
  bool fresh_retry_used = false;   // a digest mismatch after resume already retried from zero
  Clock::time_point not_before{};
  Clock::time_point deadline{};  // FetchOptions::max_time after the first attempt began; {}: none
  std::uint64_t max_resumed_from = 0;
};

bool md5_only(const FetchRequest& r) { return r.sha256.empty() && !r.md5.empty(); }

void reset_hashers(Transfer& t) {
  t.sha.emplace(HashAlgorithm::Sha256);
  if (md5_only(*t.req)) {
    t.md5.emplace(HashAlgorithm::Md5);
  } else {
    t.md5.reset();
  }
}

/// Whether `etag` is a strong entity tag (RFC 9110 §8.8.3: If-Range takes no weak one).
bool strong_etag(const std::string& etag) { return etag.size() >= 2 && etag.front() == '"'; }

/// Removes the .partial and the validators kept beside it.
void drop_partial(const Transfer& t) {
  std::error_code ec;
  if (!t.partial.empty()) std::filesystem::remove(t.partial, ec);
  if (!t.validators.empty()) std::filesystem::remove(t.validators, ec);
}

/// A request checked by no digest may resume only with the validators of the answer that began
/// its .partial (curl -C - users learn why: a file changed between the two answers would be
/// spliced). One digest-checked request resumes without them: the digest refuses a splice.
bool needs_validator(const FetchRequest& r) { return r.sha256.empty() && r.md5.empty(); }

/// Reads the validators file beside the .partial (lines `etag: V`, `last-modified: V`, `length: N`).
void read_validators(Transfer& t) {
  t.kept_etag.clear();
  t.kept_last_modified.clear();
  t.kept_length.reset();
  std::ifstream in(t.validators);
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with("etag: ")) t.kept_etag = line.substr(6);
    else if (line.starts_with("last-modified: ")) t.kept_last_modified = line.substr(15);
    else if (line.starts_with("length: ") && line.size() > 8 && line.size() < 28 &&
             line.find_first_not_of("0123456789", 8) == std::string::npos)
      t.kept_length = std::stoull(line.substr(8));
  }
}

/// Writes the validators of a 2xx answer that starts a .partial (before its first byte, so a
/// process killed during the body leaves them beside it); none: removes the file.
void write_validators(const Transfer& t) {
  std::error_code ec;
  std::string text;
  if (strong_etag(t.etag)) text += "etag: " + t.etag + "\n";
  if (!t.last_modified.empty()) text += "last-modified: " + t.last_modified + "\n";
  if (text.empty()) {
    std::filesystem::remove(t.validators, ec);
    return;
  }
  if (t.header_length) text += "length: " + std::to_string(*t.header_length) + "\n";
  // Never through a link planted in a shared cache (attack 22, A2): the entry itself is replaced.
  (void)write_file_atomic(t.validators, text, {.mode = 0644, .follow_symlink = false, .sync = false});
}

/// The host of an absolute URL, lower-case, without user info and port ("[::1]" keeps brackets).
std::string host_of(std::string_view url) {
  const auto scheme = url.find("://");
  if (scheme == std::string_view::npos) return "";
  std::string_view rest = url.substr(scheme + 3);
  rest = rest.substr(0, rest.find_first_of("/?#"));
  if (const auto at = rest.rfind('@'); at != std::string_view::npos) rest.remove_prefix(at + 1);
  if (rest.starts_with('[')) return ascii_lower(std::string(rest.substr(0, rest.find(']') + 1)));
  return ascii_lower(std::string(rest.substr(0, rest.find(':'))));
}

bool loopback_host(const std::string& host) { return host == "127.0.0.1" || host == "localhost" || host == "[::1]"; }

bool starts_with_ci(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && ascii_lower(std::string(s.substr(0, prefix.size()))) == prefix;
}

/// The URL libcurl is fetching now (after the redirects so far), or "".
std::string current_url(const Transfer& t) {
  char* eff = nullptr;
  if (t.easy && lc().easy_getinfo(t.easy.get(), CURLINFO_EFFECTIVE_URL, &eff) == CURLE_OK && eff != nullptr) return eff;
  return "";
}

/// A redirect to plain http:// is followed only from http:// and not from this machine to
/// another (the manifest's rule for an http:// base: loopback only): an https:// download that a
/// server sends to http:// would lose TLS without a word (pip and uv refuse such downgrades;
/// libcurl's CURLOPT_REDIR_PROTOCOLS_STR "https" is set too). The reason, or "".
std::string refused_redirect(const Transfer& t) {
  const std::string from = current_url(t);
  std::string_view to = t.location;
  bool to_http = starts_with_ci(to, "http://");
  std::string to_url(to);
  if (to.starts_with("//")) {  // scheme-relative: the scheme of the URL that answered
    to_http = starts_with_ci(from, "http://");
    to_url = (to_http ? "http:" : "https:") + to_url;
  }
  if (!to_http) return "";
  if (!starts_with_ci(from, "http://"))
    return "refusing the redirect of " + t.label + " from " + redact_url(from) + " to plain " + redact_url(to_url) +
           ": a download that starts on https:// stays on https://";
  if (loopback_host(host_of(from)) && !loopback_host(host_of(to_url)))
    return "refusing the redirect of " + t.label + " from " + redact_url(from) + " to " + redact_url(to_url) +
           ": plain http:// is followed only on this machine (127.0.0.1, localhost, [::1])";
  return "";
}

/// The headers of the final answer to a request are in (the blank line after them). A resumed
/// request (Range + If-Range) is checked: a 200 is the whole file — the .partial restarts from
/// zero in this same answer (RFC 9110 §13.1.5); a 206 must start where the .partial ends and be
/// of the version it began (same strong ETag or Last-Modified and total length, when the server
/// sends them; a server ignoring If-Range is caught here). False: stop this transfer.
bool on_headers_done(Transfer& t) {
  const long status = t.response_status;
  if (status >= 300 && status < 400 && !t.location.empty()) {
    if (std::string why = refused_redirect(t); !why.empty()) {
      t.abort_error = Error{ErrorKind::Network, t.redacted, why, "",
                            "ask the server's owners to redirect to https://, or write the https:// URL it "
                            "should reach"};
      return false;
    }
  }
  if (status < 200 || status >= 300) return true;  // 1xx, a redirect, or an error (FAILONERROR)
  if (t.resume_requested && status == 206) {
    std::string_view cr = t.content_range;
    std::uint64_t start = 0, total = 0;
    bool total_known = false, ok = cr.starts_with("bytes ");
    if (ok) {
      cr.remove_prefix(6);
      const auto dash = cr.find('-'), slash = cr.find('/');
      ok = dash != std::string_view::npos && slash != std::string_view::npos && dash > 0 && dash < 20;
      if (ok) {
        const std::string first(cr.substr(0, dash));
        ok = first.find_first_not_of("0123456789") == std::string::npos;
        if (ok) start = std::stoull(first);
        const std::string last(cr.substr(slash + 1));
        if (!last.empty() && last.size() < 20 && last.find_first_not_of("0123456789") == std::string::npos) {
          total = std::stoull(last);
          total_known = true;
        }
      }
    }
    // A 206 to an If-Range request carries the validator it matched (RFC 9110 §15.3.7): one that
    // drops it is not known to be the version the .partial began, and restarts (attack 22, A6:
    // a 206 with no ETag spliced two versions of a base lockfile).
    const bool other_version = !ok || start != t.resumed_from ||
                               (!t.kept_etag.empty() && t.etag != t.kept_etag) ||
                               (t.kept_etag.empty() && !t.kept_last_modified.empty() &&
                                t.last_modified != t.kept_last_modified) ||
                               (t.kept_length && total_known && total != *t.kept_length);
    if (other_version) {
      t.resume_mismatch = true;
      return false;
    }
    return true;
  }
  if (t.resume_requested) {  // the whole file again: the kept bytes are of another version
    if (::ftruncate(t.fd.get(), 0) != 0 || ::lseek(t.fd.get(), 0, SEEK_SET) < 0) {
      t.resume_mismatch = true;
      return false;
    }
    t.written = 0;
    t.resumed_from = 0;
    t.max_resumed_from = 0;
    t.resume_requested = false;
    reset_hashers(t);
  }
  if (!t.validators.empty()) write_validators(t);
  return true;
}

size_t on_header(char* data, size_t size, size_t nitems, void* userp) {
  auto* t = static_cast<Transfer*>(userp);
  const size_t n = size * nitems;
  std::string_view line(data, n);
  if (line.size() >= 5 && line.substr(0, 5) == "HTTP/") {
    // A new response (after a redirect or an interim 1xx): forget the previous one's headers.
    t->etag.clear();
    t->last_modified.clear();
    t->cache_control.clear();
    t->retry_after.clear();
    t->content_range.clear();
    t->location.clear();
    t->header_length.reset();
    t->response_status = 0;
    const auto sp = line.find(' ');
    if (sp != std::string_view::npos && line.size() >= sp + 4) {
      const std::string code(line.substr(sp + 1, 3));
      if (code.find_first_not_of("0123456789") == std::string::npos) t->response_status = std::stol(code);
    }
    return n;
  }
  if (line == "\r\n" || line == "\n") return on_headers_done(*t) ? n : 0;
  auto colon = line.find(':');
  if (colon == std::string_view::npos) return n;
  std::string name = ascii_lower(std::string(line.substr(0, colon)));
  std::string value(trim_view(line.substr(colon + 1), " \t\r\n"));
  if (name == "etag") t->etag = value;
  else if (name == "last-modified") t->last_modified = value;
  else if (name == "cache-control") t->cache_control = value;
  else if (name == "retry-after") t->retry_after = value;
  else if (name == "content-range") t->content_range = value;
  else if (name == "location") t->location = value;
  else if (name == "content-length" && !value.empty() && value.size() < 20 &&
           value.find_first_not_of("0123456789") == std::string::npos)
    t->header_length = std::stoull(value);
  return n;
}

bool write_all(int fd, const char* data, size_t n, int& err) {
  while (n > 0) {
    ssize_t w = ::write(fd, data, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      err = errno;
      return false;
    }
    data += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

size_t on_body(char* data, size_t size, size_t nmemb, void* userp) {
  auto* t = static_cast<Transfer*>(userp);
  const size_t n = size * nmemb;
  if (!t->content_length) {
    curl_off_t cl = -1;
    if (lc().easy_getinfo(t->easy.get(), CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl) == CURLE_OK &&
        cl >= 0) {
      t->content_length = static_cast<std::uint64_t>(cl);
    }
  }
  const auto& req = *t->req;
  if (!req.size && (t->written + n > t->unknown_size_cap ||
                    (t->content_length && t->resumed_from + *t->content_length > t->unknown_size_cap))) {
    const std::uint64_t cap = t->unknown_size_cap;
    t->abort_error = Error{ErrorKind::Integrity, t->redacted,
                           "download of " + t->label + " refused: its size is not recorded and it passes the cap of " +
                               size_text(cap) + " for downloads of unknown size (ENVLOCK_MAX_DOWNLOAD_SIZE)",
                           "", "nothing was kept; raise the cap with ENVLOCK_MAX_DOWNLOAD_SIZE (e.g. 16G) if the file "
                               "is really this large, or use a lockfile that records each package's size"};
    t->cap_exceeded = true;
    return 0;
  }
  if (req.size && t->written + n > *req.size) {
    t->abort_error = Error{ErrorKind::Integrity, t->redacted,
                           "size mismatch for " + t->label + ": the server sent more than the expected " +
                               size_text(*req.size),
                           "", "the file on the server differs from the record; refresh the "
                               "lockfile or repodata, or report it to the channel's maintainers"};
    return 0;
  }
  int err = 0;
  if (!write_all(t->fd.get(), data, n, err)) {
    t->abort_error = Error{ErrorKind::Io, t->partial.string(),
                           "cannot write download of " + t->label + ": " + errno_text(err),
                           "", err == ENOSPC  ? "free some disk space and run the command again"
                               : err == EFBIG ? "a file-size limit is set (`ulimit -f`): raise it and retry"
                                              : ""};
    return 0;
  }
  t->sha->update(data, n);
  if (t->md5) t->md5->update(data, n);
  t->written += n;
  return n;
}

/// Reads an existing partial file into the hashers; false on read failure.
bool hash_existing(Transfer& t, std::uint64_t bytes) {
  Fd in(::open(t.partial.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!in.valid()) return false;
  std::vector<char> buf(1 << 16);
  std::uint64_t left = bytes;
  while (left > 0) {
    ssize_t r = ::read(in.get(), buf.data(), std::min<std::uint64_t>(buf.size(), left));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    t.sha->update(buf.data(), static_cast<size_t>(r));
    if (t.md5) t.md5->update(buf.data(), static_cast<size_t>(r));
    left -= static_cast<std::uint64_t>(r);
  }
  return true;
}

/// A setting's value (envlock/settings.hpp) as a whole number of at most 6 digits, or nullopt
/// (unset, empty, not a number).
std::optional<long> env_number(const std::string& v) {
  if (v.empty() || v.size() > 6) return std::nullopt;
  for (char c : v)
    if (c < '0' || c > '9') return std::nullopt;
  return std::strtol(v.c_str(), nullptr, 10);
}

std::mutex g_settings_mu;
NetworkSettings g_settings;  // set_network_settings()

/// The options with the environment's network settings applied, then the command line's
/// (envlock/fetch.hpp).
FetchOptions with_environment(FetchOptions o) {
  const Settings env = settings();
  if (auto s = env_number(env.connect_timeout); s && *s > 0) o.connect_timeout = std::chrono::seconds(*s);
  if (auto s = env_number(env.read_timeout); s && *s > 0) o.low_speed_time = std::chrono::seconds(*s);
  if (auto n = env_number(env.retries)) o.max_retries = static_cast<unsigned>(*n);
  if (auto n = env_number(env.low_speed_limit); n && *n > 0) o.low_speed_limit = static_cast<std::uint64_t>(*n);
  if (auto s = env_number(env.max_time); s && *s > 0) o.max_time = std::chrono::seconds(*s);
  if (!env.ca_bundle.empty() && o.ca_bundle.empty()) o.ca_bundle = env.ca_bundle;
  std::lock_guard lock(g_settings_mu);
  if (g_settings.connect_timeout) o.connect_timeout = *g_settings.connect_timeout;
  if (g_settings.read_timeout) o.low_speed_time = *g_settings.read_timeout;
  if (g_settings.retries) o.max_retries = *g_settings.retries;
  if (g_settings.low_speed_limit) o.low_speed_limit = *g_settings.low_speed_limit;
  if (g_settings.max_time) o.max_time = *g_settings.max_time;
  if (!g_settings.ca_bundle.empty()) o.ca_bundle = g_settings.ca_bundle;
  return o;
}

/// `url` after the first matching (from, to) prefix rewrite.
std::string rewritten(const std::string& url, const std::vector<std::pair<std::string, std::string>>& prefixes) {
  for (const auto& [from_raw, to_raw] : prefixes) {
    std::string_view from(from_raw), to(to_raw);
    while (from.size() > 1 && from.back() == '/') from.remove_suffix(1);
    while (to.size() > 1 && to.back() == '/') to.remove_suffix(1);
    if (from.empty() || !url.starts_with(from)) continue;
    if (url.size() > from.size() && url[from.size()] != '/') continue;
    return std::string(to) + url.substr(from.size());
  }
  return url;
}

class Batch {
 public:
  Batch(const std::vector<FetchRequest>& requests, const FetchOptions& options)
      : options_(with_environment(options)), results_(requests.size()) {
    transfers_.resize(requests.size());
    for (std::size_t i = 0; i < requests.size(); ++i) {
      Transfer& t = transfers_[i];
      t.index = i;
      t.req = &requests[i];
      const std::string url = rewritten(requests[i].url, options.url_prefixes);
      t.scheme = scheme_of(url);
      t.redacted = redact_url(url);
      t.curl_url = url;
      if (t.scheme == Scheme::File) {
        // libcurl refuses a raw space; a lockfile written before URLs were encoded may hold one.
        // Decoding an encoded URL and encoding it again gives the same URL.
        if (auto path = path_from_file_url(url)) {
          t.curl_url = file_url_from_path(*path);
          t.file_path = *path;
        } else {
          t.bad_url = path.error();
        }
      }
      t.label = requests[i].label.empty() ? last_segment(t.redacted) : requests[i].label;
      if (auto cap = unknown_size_cap(options)) t.unknown_size_cap = *cap;
      else cap_error_ = cap.error();
      if (!requests[i].destination.empty()) {
        t.partial = partial_path(requests[i].destination);
        // Only a request that may resume keeps validators (repodata is conditional or compressed).
        const FetchRequest& q = requests[i];
        if (needs_validator(q) && q.accept_encoding == AcceptEncoding::Identity && q.if_none_match.empty() &&
            q.if_modified_since.empty())
          t.validators = t.partial.string() + ".validators";
      }
    }
    progress_.files_total = requests.size();
  }

  std::vector<Result<FetchResult>> run();

 private:
  enum class StartOutcome { Started, Finished };

  std::optional<Error> validate(const Transfer& t, std::set<std::string>& seen) const;
  StartOutcome start(Transfer& t);
  void finish(Transfer& t, CURLcode code);
  void verify_and_commit(Transfer& t, long status);
  void retry_or_fail(Transfer& t, Error error, std::chrono::milliseconds delay);
  void fail(Transfer& t, Error error);
  void succeed(Transfer& t, FetchResult result);
  std::chrono::milliseconds backoff(const Transfer& t) const;
  void report_progress(bool force);
  std::uint64_t bytes_in_flight() const;

  const FetchOptions options_;
  std::unique_lock<std::mutex> session_lock_;  // options_.session, when this batch runs on it
  std::optional<Error> cap_error_;  // ENVLOCK_MAX_DOWNLOAD_SIZE does not parse
  std::vector<Transfer> transfers_;
  std::vector<std::optional<Result<FetchResult>>> results_;
  MultiHandle own_multi_;    // without a session (or while it is busy)
  CURLM* multi_ = nullptr;  // own_multi_, or the session's
  CURLSH* share_ = nullptr;  // the session's, or none
  std::deque<std::size_t> ready_;
  std::vector<std::size_t> waiting_;  // in backoff
  std::set<std::size_t> active_;
  FetchProgress progress_;
  std::uint64_t bytes_finished_ = 0;  // bytes of completed transfers
  std::map<std::size_t, std::uint64_t> known_totals_;
  Clock::time_point last_report_{};
  Clock::time_point rate_time_{};
  std::uint64_t rate_bytes_ = 0;
};

std::optional<Error> Batch::validate(const Transfer& t, std::set<std::string>& seen) const {
  const FetchRequest& r = *t.req;
  if (r.url.empty()) return Error{ErrorKind::Usage, "", "download request without a URL"};
  if (t.scheme == Scheme::Unsupported) {
    return Error{ErrorKind::Usage, t.redacted, "unsupported URL scheme",
                 "", "use an http://, https:// or file:// URL"};
  }
  if (t.bad_url) return Error{ErrorKind::Usage, t.redacted, t.bad_url->message, "", t.bad_url->hint};
  // A file:// URL naming a FIFO, device, socket or folder: libcurl's read of a FIFO waits for a
  // writer forever, of a device reads without end. Only a regular file (a link to one is fine)
  // is read, as conda's local channels read only files (requests' file adapter opens them).
  if (t.scheme == Scheme::File) {
    struct stat st {};
    if (::stat(t.file_path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
      const char* what = S_ISFIFO(st.st_mode)  ? "a FIFO (named pipe)"
                         : S_ISDIR(st.st_mode) ? "a folder"
                         : S_ISSOCK(st.st_mode) ? "a socket"
                         : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device"
                                                                       : "not a regular file";
      return Error{ErrorKind::Io, t.redacted, std::string("names ") + what + ", not a regular file; refusing to read it",
                   "", "point the URL at the file itself (a file:// URL is read only when it names a regular file)"};
    }
  }
  if (!r.size && cap_error_) return *cap_error_;
  if (r.destination.empty()) {
    return Error{ErrorKind::Usage, t.redacted, "download request without a destination path"};
  }
  if (!r.sha256.empty() && !is_hex_digest(r.sha256, HashAlgorithm::Sha256)) {
    return Error{ErrorKind::Usage, t.redacted,
                 "expected sha256 of " + t.label + " is not 64 hex digits: '" + r.sha256 + "'"};
  }
  if (!r.md5.empty() && !is_hex_digest(r.md5, HashAlgorithm::Md5)) {
    return Error{ErrorKind::Usage, t.redacted,
                 "expected md5 of " + t.label + " is not 32 hex digits: '" + r.md5 + "'"};
  }
  std::string key = std::filesystem::absolute(r.destination).lexically_normal().string();
  if (!seen.insert(key).second) {
    return Error{ErrorKind::Usage, t.redacted,
                 "two downloads in one batch write to the same file " + r.destination.string()};
  }
  return std::nullopt;
}

std::chrono::milliseconds Batch::backoff(const Transfer& t) const {
  using std::chrono::milliseconds;
  // Server-sent Retry-After (delta-seconds form) wins, within the cap.
  if (!t.retry_after.empty() &&
      std::all_of(t.retry_after.begin(), t.retry_after.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
      t.retry_after.size() < 8) {
    return std::min(milliseconds(std::stol(t.retry_after) * 1000), options_.retry_max_delay);
  }
  const unsigned shift = std::min(t.attempts > 0 ? t.attempts - 1 : 0u, 20u);
  auto delay = options_.retry_base_delay * (1LL << shift);
  return std::min(std::chrono::duration_cast<milliseconds>(delay), options_.retry_max_delay);
}

void Batch::fail(Transfer& t, Error error) {
  t.fd.reset();
  // Keep a non-empty partial of a transfer that only failed on the network: a later run resumes
  // it. Anything else (integrity, I/O, client error) leaves nothing behind.
  std::error_code ec;
  const bool keep = error.kind == ErrorKind::Network && t.scheme == Scheme::Http &&
                    t.req->accept_encoding == AcceptEncoding::Identity && t.written > 0 &&
                    t.req->if_none_match.empty() && t.req->if_modified_since.empty();
  if (!keep) drop_partial(t);
  if (t.attempts > 1 && error.kind == ErrorKind::Network) {
    error.detail += (error.detail.empty() ? "" : "\n");
    error.detail += "gave up after " + std::to_string(t.attempts) + " attempts";
  }
  results_[t.index] = std::move(error);
  progress_.files_done++;
  progress_.files_failed++;
  bytes_finished_ += t.written;
}

void Batch::succeed(Transfer& t, FetchResult result) {
  progress_.files_done++;
  bytes_finished_ += result.size;
  known_totals_[t.index] = result.size;
  results_[t.index] = std::move(result);
}

void Batch::retry_or_fail(Transfer& t, Error error, std::chrono::milliseconds delay) {
  if (t.attempts > options_.max_retries || (t.deadline != Clock::time_point{} && Clock::now() + delay >= t.deadline)) {
    fail(t, std::move(error));
    return;
  }
  t.not_before = Clock::now() + delay;
  waiting_.push_back(t.index);
}

Batch::StartOutcome Batch::start(Transfer& t) {
  const FetchRequest& req = *t.req;
  t.attempts++;
  t.abort_error.reset();
  t.content_length.reset();
  t.etag.clear();
  t.last_modified.clear();
  t.cache_control.clear();
  t.retry_after.clear();
  t.errbuf.fill('\0');
  t.resume_requested = false;
  t.resume_mismatch = false;
  t.response_status = 0;
  t.content_range.clear();
  t.header_length.reset();
  t.resumed_from = 0;
  t.written = 0;
  reset_hashers(t);

  const bool conditional = !req.if_none_match.empty() || !req.if_modified_since.empty();
  const bool may_resume = t.scheme == Scheme::Http && req.accept_encoding == AcceptEncoding::Identity &&
                          !conditional && !t.restart_from_zero;
  if (t.restart_from_zero) drop_partial(t);
  t.restart_from_zero = false;

  std::uint64_t existing = 0;
  struct stat st {};
  // lstat, and O_NOFOLLOW below: a .partial that is not a plain file (a link someone with write
  // access to a shared package cache planted, attack 22 A2) is removed, never written through,
  // as pip, uv and rattler write a download only into a file they just created.
  // A hard link (st_nlink > 1) or a file of another user is someone else's inode: removed as well
  // (attack 22, A15), and a restart is written into a file created here (O_EXCL).
  const bool is_there = ::lstat(t.partial.c_str(), &st) == 0;
  const bool own_plain_file = is_there && S_ISREG(st.st_mode) && st.st_nlink == 1 && st.st_uid == ::geteuid();
  if (is_there && !own_plain_file) drop_partial(t);
  if (may_resume && own_plain_file) {
    existing = static_cast<std::uint64_t>(st.st_size);
    if (req.size && existing > *req.size) existing = 0;
  }
  t.kept_etag.clear();
  t.kept_last_modified.clear();
  t.kept_length.reset();
  if (existing > 0 && needs_validator(req)) {
    // No digest will catch a splice: resume only the version the .partial began (If-Range).
    read_validators(t);
    if (t.kept_etag.empty() && t.kept_last_modified.empty()) existing = 0;
    if (t.kept_length && existing >= *t.kept_length) existing = 0;
  }
  if (existing > 0 && !hash_existing(t, existing)) {
    existing = 0;
    reset_hashers(t);
  }
  if (existing == 0) ::unlink(t.partial.c_str());  // whatever is there now (ENOENT: nothing)
  const int flags = O_WRONLY | O_CLOEXEC | O_NOFOLLOW | (existing > 0 ? 0 : O_CREAT | O_EXCL);
  t.fd = Fd(::open(t.partial.c_str(), flags, 0644));
  if (t.fd.valid() && existing > 0) {
    // The file opened must still be the one checked (not a link swapped in since).
    struct stat now {};
    if (::fstat(t.fd.get(), &now) != 0 || now.st_ino != st.st_ino || now.st_dev != st.st_dev || now.st_nlink != 1) {
      t.fd = Fd(-1);
      drop_partial(t);
      existing = 0;
      reset_hashers(t);
      t.fd = Fd(::open(t.partial.c_str(), O_WRONLY | O_CLOEXEC | O_NOFOLLOW | O_CREAT | O_EXCL, 0644));
    }
  }
  if (!t.fd.valid()) {
    const int err = errno;
    fail(t, Error{ErrorKind::Io, t.partial.string(),
                  "cannot create the download file for " + t.label + ": " + errno_text(err), "",
                  err == ENOENT ? "the destination directory must exist" : ""});
    return StartOutcome::Finished;
  }
  if (existing > 0) {
    if (::ftruncate(t.fd.get(), static_cast<off_t>(existing)) != 0 ||
        ::lseek(t.fd.get(), static_cast<off_t>(existing), SEEK_SET) < 0) {
      fail(t, Error{ErrorKind::Io, t.partial.string(), "cannot reopen partial download: " + errno_text(errno)});
      return StartOutcome::Finished;
    }
    t.written = existing;
    t.resumed_from = existing;
    t.max_resumed_from = std::max(t.max_resumed_from, existing);
    if (req.size && existing == *req.size) {
      // Everything is already here (an earlier run was stopped before the rename): verify locally.
      verify_and_commit(t, 0);
      return StartOutcome::Finished;
    }
    t.resume_requested = true;
  }

  if (!t.easy) t.easy.reset(lc().easy_init());
  else lc().easy_reset(t.easy.get());
  if (!t.easy) throw std::bad_alloc();
  CURL* e = t.easy.get();
  lc().easy_setopt(e, CURLOPT_URL, t.curl_url.c_str());
  lc().easy_setopt(e, CURLOPT_PRIVATE, &t);
  lc().easy_setopt(e, CURLOPT_WRITEFUNCTION, &on_body);
  lc().easy_setopt(e, CURLOPT_WRITEDATA, &t);
  lc().easy_setopt(e, CURLOPT_HEADERFUNCTION, &on_header);
  lc().easy_setopt(e, CURLOPT_HEADERDATA, &t);
  lc().easy_setopt(e, CURLOPT_ERRORBUFFER, t.errbuf.data());
  lc().easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  if (share_ != nullptr) lc().easy_setopt(e, CURLOPT_SHARE, share_);
  lc().easy_setopt(e, CURLOPT_FAILONERROR, 1L);
  lc().easy_setopt(e, CURLOPT_FOLLOWLOCATION, 1L);
  lc().easy_setopt(e, CURLOPT_MAXREDIRS, 10L);
  lc().easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https,file");
  // https:// stays on https:// (refused_redirect() says so first, with the URLs).
  lc().easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, starts_with_ci(t.curl_url, "https://") ? "https" : "http,https");
  lc().easy_setopt(e, CURLOPT_BUFFERSIZE, 256L * 1024L);
  lc().easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(options_.connect_timeout.count() * 1000));
  lc().easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, static_cast<long>(options_.low_speed_limit));
  lc().easy_setopt(e, CURLOPT_LOW_SPEED_TIME, static_cast<long>(options_.low_speed_time.count()));
  if (options_.max_time.count() > 0) {
    // One deadline for the file, all attempts and waits together (not libcurl's per attempt).
    if (t.deadline == Clock::time_point{}) t.deadline = Clock::now() + options_.max_time;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(t.deadline - Clock::now()).count();
    lc().easy_setopt(e, CURLOPT_TIMEOUT_MS, static_cast<long>(std::max<long long>(left, 1)));
  }
  const std::string agent =
      options_.user_agent.empty() ? std::string("envlock/") + ENVLOCK_VERSION_STRING : options_.user_agent;
  lc().easy_setopt(e, CURLOPT_USERAGENT, agent.c_str());  // libcurl copies option strings
  if (options_.use_netrc) {
    lc().easy_setopt(e, CURLOPT_NETRC, static_cast<long>(CURL_NETRC_OPTIONAL));
    std::string netrc = options_.netrc_file.string();
    if (netrc.empty()) {
      netrc = settings().netrc;
    }
    if (!netrc.empty()) lc().easy_setopt(e, CURLOPT_NETRC_FILE, netrc.c_str());
  }
  if (t.credential) {
    // Sent pre-emptively, to this host only (no CURLOPT_UNRESTRICTED_AUTH: a redirect elsewhere
    // goes without it). libcurl copies the strings.
    if (t.credential->kind == Credential::Kind::Bearer) {
      lc().easy_setopt(e, CURLOPT_HTTPAUTH, static_cast<long>(CURLAUTH_BEARER));
      lc().easy_setopt(e, CURLOPT_XOAUTH2_BEARER, t.credential->token.c_str());
    } else if (t.credential->kind == Credential::Kind::Basic) {
      lc().easy_setopt(e, CURLOPT_HTTPAUTH, static_cast<long>(CURLAUTH_BASIC));
      lc().easy_setopt(e, CURLOPT_USERNAME, t.credential->username.c_str());
      lc().easy_setopt(e, CURLOPT_PASSWORD, t.credential->password.c_str());
    }
  }
  if (!options_.ca_bundle.empty()) lc().easy_setopt(e, CURLOPT_CAINFO, options_.ca_bundle.c_str());
  if (req.accept_encoding == AcceptEncoding::Any) lc().easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
  curl_slist* list = nullptr;
  std::string range;
  if (t.resume_requested) {
    // CURLOPT_RANGE, not CURLOPT_RESUME_FROM_LARGE: on_headers_done() takes a 200 as the whole
    // file (If-Range's answer when the file changed) instead of libcurl's "cannot resume" error.
    range = std::to_string(existing) + "-";
    lc().easy_setopt(e, CURLOPT_RANGE, range.c_str());
    const std::string& validator = strong_etag(t.kept_etag) ? t.kept_etag : t.kept_last_modified;
    if (!validator.empty()) list = lc().slist_append(list, ("If-Range: " + validator).c_str());
  }
  if (!req.accept.empty()) list = lc().slist_append(list, ("Accept: " + req.accept).c_str());
  if (!req.if_none_match.empty()) list = lc().slist_append(list, ("If-None-Match: " + req.if_none_match).c_str());
  if (!req.if_modified_since.empty()) {
    list = lc().slist_append(list, ("If-Modified-Since: " + req.if_modified_since).c_str());
  }
  t.headers.reset(list);
  if (list != nullptr) lc().easy_setopt(e, CURLOPT_HTTPHEADER, list);

  if (req.size) known_totals_[t.index] = *req.size;
  lc().multi_add_handle(multi_, e);
  active_.insert(t.index);
  return StartOutcome::Started;
}

void Batch::verify_and_commit(Transfer& t, long status) {
  const FetchRequest& req = *t.req;
  const std::string actual_sha = t.sha->hex_digest();
  const std::string actual_md5 = t.md5 ? t.md5->hex_digest() : std::string();
  t.fd.reset();

  std::string problem;
  if (req.size && t.written != *req.size) {
    problem = "size";
  } else if (!req.sha256.empty() && !digest_equal(req.sha256, actual_sha)) {
    problem = "sha256";
  } else if (md5_only(req) && !digest_equal(req.md5, actual_md5)) {
    problem = "md5";
  }
  if (!problem.empty()) {
    std::error_code ec;
    std::filesystem::remove(t.partial, ec);
    if (t.resumed_from > 0 && !t.fresh_retry_used) {
      // The bytes kept from an earlier attempt may be the culprit: try once more from zero.
      t.fresh_retry_used = true;
      t.restart_from_zero = true;
      t.not_before = Clock::now();
      waiting_.push_back(t.index);
      return;
    }
    std::string detail;
    detail += "  url:      " + t.redacted + "\n";
    if (problem == "md5") {
      detail += "  expected: md5 " + ascii_lower(req.md5) +
                (req.size ? ", " + size_text(*req.size) : std::string()) + "\n";
      detail += "  actual:   md5 " + actual_md5 + ", " + size_text(t.written);
    } else {
      const std::string want = req.sha256.empty() ? std::string("(not recorded)") : ascii_lower(req.sha256);
      detail += "  expected: sha256 " + want + (req.size ? ", " + size_text(*req.size) : std::string()) + "\n";
      detail += "  actual:   sha256 " + actual_sha + ", " + size_text(t.written);
    }
    fail(t, Error{ErrorKind::Integrity, t.redacted, problem + " mismatch for " + t.label, detail,
                  "the file on the server differs from the record; nothing was kept. Refresh the "
                  "lockfile or repodata, or report it to the channel's maintainers"});
    return;
  }
  std::error_code ec;
  std::filesystem::rename(t.partial, req.destination, ec);
  if (ec) {
    std::filesystem::remove(t.partial, ec);
    fail(t, Error{ErrorKind::Io, req.destination.string(), "cannot move the verified download of " + t.label +
                                                             " into place: " + ec.message()});
    return;
  }
  if (!t.validators.empty()) std::filesystem::remove(t.validators, ec);
  FetchResult r;
  r.path = req.destination;
  r.url = t.redacted;
  if (t.easy) {
    char* eff = nullptr;
    if (lc().easy_getinfo(t.easy.get(), CURLINFO_EFFECTIVE_URL, &eff) == CURLE_OK && eff != nullptr) {
      r.url = redact_url(eff);
    }
  }
  r.http_status = status;
  r.etag = t.etag;
  r.last_modified = t.last_modified;
  r.cache_control = t.cache_control;
  r.size = t.written;
  r.sha256 = actual_sha;
  r.md5 = actual_md5;
  r.attempts = t.attempts;
  r.resumed_from = t.max_resumed_from;
  succeed(t, std::move(r));
}

void Batch::finish(Transfer& t, CURLcode code) {
  lc().multi_remove_handle(multi_, t.easy.get());
  active_.erase(t.index);
  long status = 0;
  lc().easy_getinfo(t.easy.get(), CURLINFO_RESPONSE_CODE, &status);

  if (t.resume_mismatch) {  // a 206 of another version (or a .partial that cannot restart)
    t.fd.reset();
    drop_partial(t);
    t.written = 0;
    t.max_resumed_from = 0;  // nothing of the .partial is in the file that arrives
    t.restart_from_zero = true;
    retry_or_fail(t, Error{ErrorKind::Network, t.redacted,
                           "the server resumed " + t.label + " from another version of the file"},
                  std::chrono::milliseconds(0));
    return;
  }
  if (t.abort_error) {
    Error err = *t.abort_error;
    t.abort_error.reset();
    if (t.cap_exceeded) {  // the cap of unknown sizes: not retried, nothing kept
      std::error_code ec;
      t.fd.reset();
      std::filesystem::remove(t.partial, ec);
      err.detail = "  url:      " + t.redacted + "\n  received: more than " + size_text(t.unknown_size_cap);
      fail(t, std::move(err));
      return;
    }
    if (err.kind == ErrorKind::Integrity) {
      std::error_code ec;
      t.fd.reset();
      std::filesystem::remove(t.partial, ec);
      if (t.resumed_from > 0 && !t.fresh_retry_used) {
        t.fresh_retry_used = true;
        t.restart_from_zero = true;
        t.not_before = Clock::now();
        waiting_.push_back(t.index);
        return;
      }
      err.detail = "  url:      " + t.redacted + "\n  expected: " + size_text(t.req->size.value_or(0)) +
                   "\n  actual:   more than " + size_text(t.req->size.value_or(0));
    }
    fail(t, std::move(err));
    return;
  }

  if (code == CURLE_OK) {
    if (status == 304) {
      t.fd.reset();
      std::error_code ec;
      std::filesystem::remove(t.partial, ec);
      FetchResult r;
      r.path = t.req->destination;
      r.url = t.redacted;
      r.http_status = 304;
      r.not_modified = true;
      r.etag = t.etag;
      r.last_modified = t.last_modified;
      r.cache_control = t.cache_control;
      r.attempts = t.attempts;
      progress_.files_done++;
      results_[t.index] = std::move(r);
      return;
    }
    verify_and_commit(t, status);
    return;
  }

  t.fd.reset();
  if (code == CURLE_RANGE_ERROR || (code == CURLE_HTTP_RETURNED_ERROR && status == 416 && t.resume_requested)) {
    // The server cannot continue the partial file: start again from zero.
    t.restart_from_zero = true;
    retry_or_fail(t, Error{ErrorKind::Network, t.redacted, "the server refused to resume " + t.label},
                  std::chrono::milliseconds(0));
    return;
  }
  // After a redirect the message names the URL that failed and the one asked for (where).
  std::string redirected;
  if (const std::string eff = current_url(t); !eff.empty() && redact_url(eff) != t.redacted)
    redirected = " at " + redact_url(eff) + " (redirected from " + t.redacted + ")";
  if (code == CURLE_HTTP_RETURNED_ERROR) {
    std::string text = status_text(status);
    Error err{ErrorKind::Network, t.redacted,
              "HTTP " + std::to_string(status) + (text.empty() ? "" : " " + text) + " for " + t.label + redirected};
    err.http_status = status;
    if (status == 401 || status == 403) {
      err.hint = "check the credentials for this host: in the channel URL, the credentials file "
                 "(ENVLOCK_AUTH_FILE) or ~/.netrc (or $NETRC)";
    } else if (status == 404 || status == 410) {
      err.hint = "the file is not on the server; check the channel URL, or refresh the lockfile";
    }
    if (transient_status(status)) {
      retry_or_fail(t, std::move(err), backoff(t));
    } else {
      fail(t, std::move(err));
    }
    return;
  }
  std::string why = t.errbuf[0] != '\0' ? std::string(t.errbuf.data()) : lc().easy_strerror(code);
  // libcurl's message may quote the URL it was given; never let credentials through.
  for (const std::string* raw : {static_cast<const std::string*>(&t.curl_url), &t.req->url}) {
    if (raw->empty()) continue;
    if (*raw == t.redacted) continue;
    for (auto pos = why.find(*raw); pos != std::string::npos; pos = why.find(*raw, pos + t.redacted.size()))
      why.replace(pos, raw->size(), t.redacted);
  }
  why = redact_text(why);
  if (code == CURLE_OPERATION_TIMEDOUT) {
    // libcurl's one code for three limits: tell them apart, and name the option of each.
    curl_off_t pretransfer = 0;
    lc().easy_getinfo(t.easy.get(), CURLINFO_PRETRANSFER_TIME_T, &pretransfer);
    // (libcurl's clock may fire CURLOPT_TIMEOUT_MS a little before ours reaches the deadline)
    if (t.deadline != Clock::time_point{} && Clock::now() + std::chrono::milliseconds(200) >= t.deadline) {
      why = "it took more than " + std::to_string(options_.max_time.count()) +
            " s, the most a download may take (--max-time, ENVLOCK_MAX_TIME)";
    } else if (pretransfer > 0) {
      why = "it stalled: less than " + std::to_string(options_.low_speed_limit) + " bytes/s for " +
            std::to_string(options_.low_speed_time.count()) +
            " s (the low-speed limit: --low-speed-limit, ENVLOCK_LOW_SPEED_LIMIT; --read-timeout, ENVLOCK_READ_TIMEOUT)";
    }
  }
  Error err{ErrorKind::Network, t.redacted, "download of " + t.label + redirected + " failed: " + why};
  if (code == CURLE_OPERATION_TIMEDOUT && why.starts_with("it stalled"))
    err.hint = "the server sends too slowly; on a slow link raise --read-timeout or lower --low-speed-limit";
  if (code == CURLE_OPERATION_TIMEDOUT && why.starts_with("it took more"))
    err.hint = "raise --max-time (or unset ENVLOCK_MAX_TIME) for a large file on a slow link";
  if (code == CURLE_FILE_COULDNT_READ_FILE && t.scheme == Scheme::File) err.http_status = 404;  // as a server's 404
  if (code == CURLE_PARTIAL_FILE || code == CURLE_RECV_ERROR || code == CURLE_GOT_NOTHING) {
    err.hint = "the connection was dropped; run the command again to resume the download";
  }
  if (t.scheme == Scheme::Http && transient_curl(code)) {
    retry_or_fail(t, std::move(err), backoff(t));
  } else {
    fail(t, std::move(err));
  }
}

std::uint64_t Batch::bytes_in_flight() const {
  std::uint64_t sum = 0;
  for (std::size_t i : active_) sum += transfers_[i].written;
  return sum;
}

void Batch::report_progress(bool force) {
  if (!options_.on_progress) return;
  const auto now = Clock::now();
  if (!force && now - last_report_ < std::chrono::milliseconds(100)) return;
  last_report_ = now;
  progress_.files_active = active_.size();
  progress_.bytes_done = bytes_finished_ + bytes_in_flight();
  std::uint64_t total = 0;
  for (const auto& [i, n] : known_totals_) total += n;
  const Transfer* shown = nullptr;  // the last active transfer with bytes, else the first active
  for (std::size_t i : active_) {
    const Transfer& t = transfers_[i];
    if (!known_totals_.count(i) && t.content_length) total += *t.content_length + t.resumed_from;
    if (t.written > 0 || shown == nullptr) shown = &t;
  }
  if (shown != nullptr) {
    progress_.current = shown->label;
    progress_.current_url = shown->redacted;
  }
  progress_.bytes_total = std::max(total, progress_.bytes_done);
  const double dt = std::chrono::duration<double>(now - rate_time_).count();
  if (rate_time_ == Clock::time_point{}) {
    rate_time_ = now;
    rate_bytes_ = progress_.bytes_done;
  } else if (dt >= 0.25) {
    const double inst = static_cast<double>(progress_.bytes_done - std::min(rate_bytes_, progress_.bytes_done)) / dt;
    progress_.bytes_per_second = progress_.bytes_per_second == 0 ? inst : 0.7 * progress_.bytes_per_second + 0.3 * inst;
    rate_time_ = now;
    rate_bytes_ = progress_.bytes_done;
  }
  options_.on_progress(progress_);
}

std::vector<Result<FetchResult>> Batch::run() {
  std::string why;
  if (detail::curl_api(&why) == nullptr) {  // every transfer fails the same way; nothing written
    std::vector<Result<FetchResult>> out;
    for (const Transfer& t : transfers_)
      out.emplace_back(Error{ErrorKind::Network, t.redacted, "cannot load libcurl: " + why, "",
                             "install libcurl (Debian: apt-get install libcurl4)"});
    return out;
  }
  if (options_.use_credentials_file) {
    auto store = options_.credentials_file.empty() ? CredentialStore::from_environment()
                                                   : CredentialStore::load(options_.credentials_file, true);
    if (!store) {  // nothing is sent with half the credentials
      std::vector<Result<FetchResult>> out;
      for (std::size_t i = 0; i < transfers_.size(); ++i) out.emplace_back(store.error());
      return out;
    }
    for (Transfer& t : transfers_) {
      if (t.scheme != Scheme::Http || url_has_credentials(t.curl_url)) continue;  // the URL's own win
      if (const Credential* c = store->find(t.curl_url)) {
        t.credential = *c;
        t.curl_url = CredentialStore::apply_to_url(t.curl_url, *c);
      }
    }
  }
  std::set<std::string> seen;
  for (Transfer& t : transfers_) {
    if (auto err = validate(t, seen)) {
      results_[t.index] = std::move(*err);
      progress_.files_done++;
      progress_.files_failed++;
    } else {
      ready_.push_back(t.index);
    }
  }
  FetchSession* session = options_.session.get();
  if (session != nullptr) session_lock_ = std::unique_lock(session->busy, std::try_to_lock);
  if (session_lock_.owns_lock()) {
    if (!session->share) {
      session->share.reset(lc().share_init());
      if (!session->share) throw std::bad_alloc();
      CURLSH* sh = session->share.get();
      lc().share_setopt(sh, CURLSHOPT_LOCKFUNC, &share_lock);
      lc().share_setopt(sh, CURLSHOPT_UNLOCKFUNC, &share_unlock);
      lc().share_setopt(sh, CURLSHOPT_USERDATA, static_cast<void*>(session));
      lc().share_setopt(sh, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
      lc().share_setopt(sh, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
    }
    if (!session->multi) {
      session->multi.reset(lc().multi_init());
      if (!session->multi) throw std::bad_alloc();
      lc().multi_setopt(session->multi.get(), CURLMOPT_MAXCONNECTS, kSessionConnections);
    }
    multi_ = session->multi.get();
    share_ = session->share.get();
  } else {
    own_multi_.reset(lc().multi_init());
    if (!own_multi_) throw std::bad_alloc();
    multi_ = own_multi_.get();
  }
  const std::size_t parallel = std::max<std::size_t>(1, options_.parallel);
  lc().multi_setopt(multi_, CURLMOPT_MAX_TOTAL_CONNECTIONS, static_cast<long>(parallel));

  while (!ready_.empty() || !waiting_.empty() || !active_.empty()) {
    const auto now = Clock::now();
    for (auto it = waiting_.begin(); it != waiting_.end();) {
      if (transfers_[*it].not_before <= now) {
        ready_.push_back(*it);
        it = waiting_.erase(it);
      } else {
        ++it;
      }
    }
    while (active_.size() < parallel && !ready_.empty()) {
      const std::size_t i = ready_.front();
      ready_.pop_front();
      start(transfers_[i]);
    }
    int running = 0;
    lc().multi_perform(multi_, &running);
    int left = 0;
    while (CURLMsg* msg = lc().multi_info_read(multi_, &left)) {
      if (msg->msg != CURLMSG_DONE) continue;
      Transfer* t = nullptr;
      lc().easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &t);
      finish(*t, msg->data.result);
    }
    report_progress(false);
    if (!ready_.empty() && active_.size() < parallel) continue;
    long timeout_ms = 100;
    for (std::size_t i : waiting_) {
      auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(transfers_[i].not_before - Clock::now());
      timeout_ms = std::min<long>(timeout_ms, std::max<long>(0, static_cast<long>(wait.count())));
    }
    if (!active_.empty() || !waiting_.empty()) lc().multi_poll(multi_, nullptr, 0, static_cast<int>(timeout_ms), nullptr);
  }
  report_progress(true);

  std::vector<Result<FetchResult>> out;
  out.reserve(results_.size());
  for (auto& r : results_) out.push_back(std::move(*r));
  return out;
}

}  // namespace

Result<std::uint64_t> unknown_size_cap(const FetchOptions& options) {
  if (options.max_unknown_size) return *options.max_unknown_size;
  const std::string env = settings().max_download_size;
  if (env.empty()) return kDefaultMaxUnknownDownload;
  const std::string_view v(env);
  std::uint64_t n = 0;
  std::size_t i = 0;
  for (; i < v.size() && v[i] >= '0' && v[i] <= '9'; ++i) {
    if (n > (UINT64_MAX - 9) / 10) { i = 0; break; }
    n = n * 10 + static_cast<std::uint64_t>(v[i] - '0');
  }
  int shift = -1;
  if (i > 0 && i == v.size()) shift = 0;
  else if (i > 0 && i + 1 == v.size()) {
    switch (v[i]) {
      case 'K': case 'k': shift = 10; break;
      case 'M': case 'm': shift = 20; break;
      case 'G': case 'g': shift = 30; break;
      case 'T': case 't': shift = 40; break;
      default: break;
    }
  }
  if (shift < 0 || n == 0 || n > (UINT64_MAX >> shift)) {
    return Error{ErrorKind::Usage, "ENVLOCK_MAX_DOWNLOAD_SIZE", "'" + std::string(v) + "' is not a size",
                 "", "give bytes, or a number with K, M, G or T (powers of 1024), e.g. 16G"};
  }
  return n << shift;
}

void set_network_settings(const NetworkSettings& settings) {
  std::lock_guard lock(g_settings_mu);
  g_settings = settings;
}

std::vector<std::string> network_environment_problems() {
  std::vector<std::string> out;
  auto quoted = [](std::string_view v) {
    return "'" + std::string(v.substr(0, 40)) + (v.size() > 40 ? "...'" : "'");
  };
  const Settings env = settings();
  const struct {
    const char* name;
    const std::string& value;
    const char* unit;  // of the number: " of seconds", ""
    const char* one;   // its least value, spelled: "1 second"; nullptr: 0 is allowed
  } numbers[] = {{"ENVLOCK_CONNECT_TIMEOUT", env.connect_timeout, " of seconds", "1 second"},
                 {"ENVLOCK_READ_TIMEOUT", env.read_timeout, " of seconds", "1 second"},
                 {"ENVLOCK_RETRIES", env.retries, "", nullptr},
                 {"ENVLOCK_LOW_SPEED_LIMIT", env.low_speed_limit, " of bytes per second", "1 byte per second"},
                 {"ENVLOCK_MAX_TIME", env.max_time, " of seconds", "1 second"}};
  for (const auto& [name, v, unit, one] : numbers) {
    if (v.empty()) continue;
    const auto n = env_number(v);
    if (!n) {
      out.push_back(std::string(name) + "=" + quoted(v) + " is not a whole number" + unit + " (at most 6 digits); ignored");
    } else if (one != nullptr && *n == 0) {
      out.push_back(std::string(name) + "=" + quoted(v) + " is not at least " + one + "; ignored");
    }
  }
  if (const std::string& ca = env.ca_bundle; !ca.empty()) {
    struct stat st {};
    if (::stat(ca.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || ::access(ca.c_str(), R_OK) != 0)
      out.push_back(std::string("ENVLOCK_CA_BUNDLE=") + quoted(ca) +
                    " is not a readable file; https transfers will fail to verify certificates");
  }
  return out;
}

std::filesystem::path partial_path(const std::filesystem::path& destination) {
  std::filesystem::path p = destination;
  p += ".partial";
  return p;
}

std::vector<Result<FetchResult>> fetch_all(const std::vector<FetchRequest>& requests, const FetchOptions& options) {
  Batch batch(requests, options);
  return batch.run();
}

Result<FetchResult> fetch_to_file(const FetchRequest& request, const FetchOptions& options) {
  std::vector<FetchRequest> one{request};
  auto results = fetch_all(one, options);
  return std::move(results.front());
}

}  // namespace envlock
