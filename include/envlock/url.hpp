#pragma once
// envlock/url.hpp — URL helpers shared by every module that prints or writes a URL.
//
// Credentials never leave memory: anaconda.org-style tokens in the path (`/t/<token>/`) and
// userinfo (`user:pass@host`; over ssh only the password) are stripped from every URL written to a lockfile, snapshot, log
// or terminal. Query strings are kept (they are part of content addresses on some servers) except
// for the keys `token`, `access_token`, `api_key`, `key`, `password`, `sig`, `signature`, whose
// values are removed.

#include <string>
#include <string_view>

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

/// Returns `text` with redact_url() applied to every URL inside it (a `scheme://` run up to the
/// next whitespace, quote, `<`, `>` or backtick). For free text that may quote what a user
/// wrote — a manifest line in an error excerpt, a MatchSpec with a channel URL — at the points
/// where envlock prints: errors and warnings never carry a credential, whatever the module that
/// built them. Idempotent; text without "://" is returned unchanged.
std::string redact_text(std::string_view text);

/// True when `url` carries credentials that redact_url() would remove.
bool url_has_credentials(std::string_view url);

/// Joins a base URL and a relative path with exactly one '/' between them.
std::string url_join(std::string_view base, std::string_view path);

}  // namespace envlock
