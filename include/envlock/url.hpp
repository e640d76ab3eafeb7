#pragma once
// envlock/url.hpp — URL helpers shared by every module that prints or writes a URL.
//
// Credentials never leave memory: anaconda.org-style tokens in the path (`/t/<token>/`) and
// userinfo (`user:pass@host`; over ssh only the password) are stripped from every URL written to a lockfile, snapshot, log
// or terminal. Query strings are kept (they are part of content addresses on some servers) except
// for the keys `token`, `access_token`, `api_key`, `key`, `password`, `sig`, `signature`, whose
// values are removed.
//
// file:// URLs of local paths (RFC 8089 over RFC 3986): file_url_from_path() and
// path_from_file_url() are the one place where a path becomes a URL and back, so a channel folder,
// a bundle or a prefix whose path holds a space, '#', '%', '?' or non-ASCII bytes reaches libcurl
// (which refuses a raw space) and every reader the same way.

#include <string>
#include <string_view>

#include "envlock/result.hpp"

namespace envlock {

/// Returns `url` with userinfo, `/t/<token>/` path segments and secret query values removed.
/// For `ssh` and `*+ssh` schemes (`git+ssh://git@host/repo.git`) the user name is kept, as ssh
/// needs it and keys, not the URL, carry the secret; only a password is removed there.
/// Not a URL (no "scheme://")? Returned unchanged. Idempotent.
/// Examples: https://user:pw@host/c -> https://host/c;
///           git+ssh://git:pw@host/r.git -> git+ssh://git@host/r.git;
///           https://conda.anaconda.org/t/abc-123/chan/linux-64/x.conda
///             -> https://conda.anaconda.org/chan/linux-64/x.conda
std::string redact_url(std::string_view url);

/// redact_url() with `<***>` where each secret was, for an excerpt that must still read as the
/// line a user can find in the file: https://<***>@host/t/<***>/c?token=<***> (ssh:
/// git:<***>@host). No secret survives; a URL without one is returned unchanged. The `<` ends a
/// URL for redact_text(), so the marks survive the redaction of printed text.
std::string marked_url(std::string_view url);

/// Returns `text` with redact_url() applied to every URL inside it (a `scheme://` run up to the
/// next whitespace, quote, `<`, `>` or backtick). For free text that may quote what a user
/// wrote — a manifest line in an error excerpt, a MatchSpec with a channel URL — at the points
/// where envlock prints: errors and warnings never carry a credential, whatever the module that
/// built them. Idempotent; text without "://" is returned unchanged.
std::string redact_text(std::string_view text);

/// An error excerpt: "  <line>\n  <indent>^" with `line` passed through redact_text() and the
/// caret under the character that was at byte `column` (0-based) of the original line, wherever
/// the removal of credentials before it moved it. Tabs before the caret are kept so it lines up.
std::string redacted_excerpt(std::string_view line, std::size_t column);

/// True when `url` carries credentials that redact_url() would remove.
bool url_has_credentials(std::string_view url);

/// Joins a base URL and a relative path with exactly one '/' between them.
std::string url_join(std::string_view base, std::string_view path);

/// `reference` resolved against `base` as RFC 3986 section 5.2 says (5.2.2 with a strict parser:
/// a reference with a scheme is taken as it is, dot segments removed; a network-path `//host/p`
/// takes the base's scheme; an absolute path the base's authority; a relative path is merged with
/// the base's path (5.2.3) and its dot segments removed (5.2.4); an empty path keeps the base's
/// path and, without a query of its own, its query; the fragment is always the reference's).
/// The components are split as Appendix B's regular expression splits them, except that a scheme
/// is only what section 3.1 calls one, a letter then letters, digits, `+`, `-`, `.` (as pip's and
/// the WHATWG parser read it): `.x:1/a.whl` is a relative path, not a URL of scheme `.x`.
/// A `base` without a scheme is no absolute URI (5.1), so nothing resolves against it: the
/// reference is returned as written. Nothing is percent-encoded, decoded or lower-cased.
/// The one resolver for every module: CEP-16 shard URLs (channel), PEP 503/691 index links (pypi).
/// Examples (base "http://a/b/c/d;p?q", RFC 3986 5.4): "g" -> "http://a/b/c/g",
/// "../g" -> "http://a/b/g", "//g" -> "http://g", "?y" -> "http://a/b/c/d;p?y",
/// "" -> "http://a/b/c/d;p?q", "../../../g" -> "http://a/g", "g:h" -> "g:h".
std::string resolve_url(std::string_view base, std::string_view reference);

/// RFC 3986 section 5.2.4 remove_dot_segments: `.` and `..` segments of a path taken out, a `..`
/// taking the segment before it, never above the root. "/a/b/c/./../../g" -> "/a/g",
/// "mid/content=5/../6" -> "mid/6", "/.." -> "/".
std::string remove_dot_segments(std::string_view path);

/// `url` with its host written in ASCII when it is not: a host that holds non-ASCII text (also
/// once percent-decoded, `pyp%D1%96.org`) becomes its IDNA A-labels `xn--…` (IDNA2008, RFC 5891
/// section 4, with the RFC 3492 Punycode encoding, through libidn2; ASCII letters lower-cased
/// first, no UTS #46 mapping, so what is shown is what the text holds). A host IDNA2008 refuses (a
/// symbol, an invisible or tag character, upper-case non-ASCII, text not in NFC) keeps its ASCII
/// and has each non-ASCII code point written `\u{XXXX}`, so no lookalike character passes for
/// ASCII. Userinfo, port, path, query and fragment are unchanged; a URL with an ASCII host (or no
/// `scheme://`, or an IPv6 literal) is returned unchanged. For output a reviewer reads (`envlock
/// diff`, `show`): a homoglyph host (`files.pythonhоsted.org` with a Cyrillic `о`) shows as
/// `files.xn--pythonhsted-xnj.org`.
/// Example: "https://pypі.org/simple" -> "https://xn--pyp-lhd.org/simple".
std::string ascii_host_url(std::string_view url);

/// `text` with ascii_host_url() applied to every URL inside it (found as redact_text() finds
/// them). Text without "://" is returned unchanged.
std::string ascii_hosts(std::string_view text);

/// RFC 3986 §2.1 percent-encoding: every byte of `text` outside the unreserved set (§2.3:
/// `A-Z a-z 0-9 - . _ ~`) and outside `keep` becomes `%XX` (upper-case hex, as §2.1 recommends);
/// bytes >= 0x80 (UTF-8) are encoded byte by byte. Deterministic; percent_decode() inverts it.
/// Example: percent_encode("/a b/100%", "/") -> "/a%20b/100%25".
std::string percent_encode(std::string_view text, std::string_view keep = {});

/// Decodes every `%XX` (either case of hex) of `text` into its byte. A '%' not followed by two hex
/// digits is kept as written (as libcurl and mamba read it), so text without escapes is returned
/// unchanged. Example: "/a%20b/c%2b" -> "/a b/c+".
std::string percent_decode(std::string_view text);

/// The `file://` URL of an absolute POSIX path: "file://" followed by the path with every byte
/// outside the unreserved set and '/' percent-encoded (RFC 8089 §2 with an empty authority;
/// the same bytes as mamba's `abs_path_to_url`). The path is not normalised or checked against
/// the filesystem. Precondition: `absolute_path` starts with '/' (std::invalid_argument
/// otherwise: callers make it absolute first).
/// Examples: "/srv/my chan" -> "file:///srv/my%20chan"; "/tmp/a#b/é" -> "file:///tmp/a%23b/%C3%A9".
std::string file_url_from_path(std::string_view absolute_path);

/// The absolute path a `file://` URL names, percent-decoded: the inverse of
/// file_url_from_path(). Accepts `file:///path` and `file://localhost/path` (RFC 8089 §2; the
/// scheme in any case); a URL written with raw spaces or other unencoded bytes (lockfiles from
/// before envlock encoded them) reads as its path unchanged. A query or fragment is not
/// split off: in a path they are ordinary bytes once encoded, and a raw '#' or '?' is kept.
/// Errors (ErrorKind::Parse, `where` = the URL): not a file:// URL; a host other than
/// `localhost` (file://server/share: envlock reads local paths only); no absolute path;
/// an encoded NUL byte (`%00`), which no path can hold.
Result<std::string> path_from_file_url(std::string_view url);

}  // namespace envlock
