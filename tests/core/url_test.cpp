// URL redaction: credentials never leave memory (envlock/url.hpp).
#include <gtest/gtest.h>

#include "envlock/url.hpp"

namespace envlock {
namespace {

TEST(RedactUrl, StripsUserinfoTokensAndSecretQueryValues) {
  EXPECT_EQ(redact_url("https://user:secret@example.com/c"), "https://example.com/c");
  EXPECT_EQ(redact_url("https://conda.anaconda.org/t/abc-123/chan/linux-64/x.conda"),
            "https://conda.anaconda.org/chan/linux-64/x.conda");
  EXPECT_EQ(redact_url("https://h/c?token=xyz&x=1"), "https://h/c?token=&x=1");
  EXPECT_EQ(redact_url("./local/dir"), "./local/dir");
}

TEST(RedactUrl, KeepsTheSshUserDropsItsPassword) {
  // pip's VCS form: without `git@` the URL no longer reaches GitHub, and the user is no secret.
  EXPECT_EQ(redact_url("git+ssh://git@github.com/org/repo.git@v1#egg=repo"),
            "git+ssh://git@github.com/org/repo.git@v1#egg=repo");
  EXPECT_EQ(redact_url("git+ssh://git:secret@host/r.git"), "git+ssh://git@host/r.git");
  EXPECT_EQ(redact_url("ssh://deploy:pw@host:2222/r"), "ssh://deploy@host:2222/r");
  EXPECT_FALSE(url_has_credentials("git+ssh://git@github.com/org/repo.git"));
  // Not ssh: a user alone is still a credential (an https token often sits there).
  EXPECT_EQ(redact_url("git+https://ghp_token@github.com/org/repo.git"), "git+https://github.com/org/repo.git");
  EXPECT_EQ(redact_url("sshfoo://u:p@h/x"), "sshfoo://h/x");
}

TEST(RedactText, RedactsEveryUrlInsideFreeText) {
  // An error excerpt quoting a manifest line, a MatchSpec with a channel URL, two URLs at once.
  EXPECT_EQ(redact_text("    - https://user:secret@127.0.0.1:9/x"), "    - https://127.0.0.1:9/x");
  EXPECT_EQ(redact_text("spec 'https://u:secret@127.0.0.1:9/x::numpy >=>2' is invalid"),
            "spec 'https://127.0.0.1:9/x::numpy >=>2' is invalid");
  EXPECT_EQ(redact_text("a https://h/t/SECRETTOK/chan b \"file://u:p@h/c\""), "a https://h/chan b \"file://h/c\"");
  EXPECT_EQ(redact_text(R"({"where": "https://u:pw@h/c/linux-64"})"), R"({"where": "https://h/c/linux-64"})");
}

TEST(RedactText, LeavesTextWithoutCredentialsAlone) {
  for (const char* s : {"", "no urls here", "://", "x ://h", "https://conda.anaconda.org/conda-forge/noarch",
                        "envlock.yaml:3:5: channel 'https://h/x' is listed twice"})
    EXPECT_EQ(redact_text(s), s) << s;
  // Idempotent.
  const std::string once = redact_text("see https://a:b@h/t/tok/c and https://c:d@i/");
  EXPECT_EQ(redact_text(once), once);
  EXPECT_EQ(once, "see https://h/c and https://i/");
}

}  // namespace
}  // namespace envlock
