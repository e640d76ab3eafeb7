// URL redaction: credentials never leave memory; file:// URLs of paths and back (envlock/url.hpp).
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <utility>

#include "envlock/url.hpp"

namespace envlock {
namespace {

TEST(RedactUrl, StripsUserinfoTokensAndSecretQueryValues) {
  EXPECT_EQ(redact_url("https://user:secret@example.com/c"), "https://example.com/c");
  EXPECT_EQ(redact_url("https://conda.anaconda.org/t/abc-123/chan/linux-64/x.conda"),
            "https://conda.anaconda.org/chan/linux-64/x.conda");
  EXPECT_EQ(redact_url("https://h/c?token=xyz&x=1"), "https://h/c?token=&x=1");
  // Issue 17 (attack, low): session and API-key spellings of index proxies were kept.
  EXPECT_EQ(redact_url("https://h/c?auth=a1&apikey=a2&session=a3&SessionId=a4&session_id=a5&jwt=a6&x=1"),
            "https://h/c?auth=&apikey=&session=&SessionId=&session_id=&jwt=&x=1");
  // Any key ending in token/signature/credential/password/secret, compared percent-decoded and
  // case-blind (session 10: GitLab's private_token and an encoded X-Amz-Signature got through).
  EXPECT_EQ(redact_url("https://gitlab.example.com/api/v4/p?private_token=glpat-S&job_TOKEN=J&v=1"),
            "https://gitlab.example.com/api/v4/p?private_token=&job_TOKEN=&v=1");
  EXPECT_EQ(redact_url("https://b.s3.amazonaws.com/x.tar.gz?X%2DAmz%2DSignature=SIG&client_secret=C&sortkey=a"),
            "https://b.s3.amazonaws.com/x.tar.gz?X%2DAmz%2DSignature=&client_secret=&sortkey=a");
  EXPECT_EQ(redact_url("./local/dir"), "./local/dir");
}

// A file:// URL is a path: a folder named `t` is no anaconda.org token (helper report, session 14:
// a channel at /tmp/al/t/channel was locked as file:///tmp/al, and its packages' URLs lost
// `/t/channel`).
TEST(RedactUrl, AFolderNamedTInAFileUrlIsNoToken) {
  EXPECT_EQ(redact_url("file:///tmp/al/t/channel/linux-64/x.conda"), "file:///tmp/al/t/channel/linux-64/x.conda");
  EXPECT_FALSE(url_has_credentials("file:///srv/t/chan"));
  EXPECT_EQ(marked_url("file:///srv/t/chan"), "file:///srv/t/chan");
  EXPECT_EQ(redact_url("https://h/t/tok/chan"), "https://h/chan");
}

// The authority ends at a backslash, as WHATWG URL parsers, requests and urllib3 read it for
// http(s): `evil.example\@` is the host there, not a user name to strip, so redaction never shows
// conda.anaconda.org for a download from evil.example (issue 17, finding 2).
TEST(RedactUrl, ABackslashEndsTheAuthorityAndHidesNoHost) {
  EXPECT_EQ(redact_url("https://evil.example\\@conda.anaconda.org/conda-forge/x.conda"),
            "https://evil.example\\@conda.anaconda.org/conda-forge/x.conda");
  EXPECT_EQ(redact_url("https://u:p@evil.example\\@conda.anaconda.org/c"), "https://evil.example\\@conda.anaconda.org/c");
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

// An excerpt of a refused line shows where each secret was, so the line can be found in the file
// (attack on issue 18, finding 6): nothing of the secret, and the marks survive redact_text().
TEST(MarkedUrl, MarksWhereEachSecretWas) {
  EXPECT_EQ(marked_url("https://alice:s3cr3t@example.com/t/tok-ABC/chan/x.conda?token=zz&a=b"),
            "https://<***>@example.com/t/<***>/chan/x.conda?token=<***>&a=b");
  EXPECT_EQ(marked_url("git+ssh://git:pw@host/r.git"), "git+ssh://git:<***>@host/r.git");
  EXPECT_EQ(marked_url("git+ssh://git@host/r.git"), "git+ssh://git@host/r.git");
  EXPECT_EQ(marked_url("https://conda.anaconda.org/conda-forge/x.conda"), "https://conda.anaconda.org/conda-forge/x.conda");
  const std::string line = "url: \"" + marked_url("https://u:p@h/t/tk/c?sig=s") + "\"";
  EXPECT_EQ(redact_text(line), line);
  EXPECT_EQ(redact_url("https://u:p@h/t/tk/c?sig=s"), "https://h/c?sig=");  // unchanged by marked_url
}

TEST(RedactText, RedactsEveryUrlInsideFreeText) {
  // An error excerpt quoting a manifest line, a MatchSpec with a channel URL, two URLs at once.
  EXPECT_EQ(redact_text("    - https://user:secret@127.0.0.1:9/x"), "    - https://127.0.0.1:9/x");
  EXPECT_EQ(redact_text("spec 'https://u:secret@127.0.0.1:9/x::numpy >=>2' is invalid"),
            "spec 'https://127.0.0.1:9/x::numpy >=>2' is invalid");
  EXPECT_EQ(redact_text("a https://h/t/SECRETTOK/chan b \"file://u:p@h/c\""), "a https://h/chan b \"file://h/c\"");
  EXPECT_EQ(redact_text(R"({"where": "https://u:pw@h/c/linux-64"})"), R"({"where": "https://h/c/linux-64"})");
}

TEST(RedactedExcerpt, TheCaretFollowsTheTextWhenCredentialsBeforeItGo) {
  // An @EXPLICIT line whose hash (column 30, 0-based) is bad: the excerpt is printed redacted.
  const std::string line = "https://u:secret@h/c/x.conda#zz";
  const std::size_t col = line.find("#zz") + 1;
  const std::string shown = "https://h/c/x.conda#zz";
  EXPECT_EQ(redacted_excerpt(line, col), "  " + shown + "\n  " + std::string(shown.find("#zz") + 1, ' ') + "^");
  EXPECT_EQ(redacted_excerpt("plain #zz", 7), "  plain #zz\n         ^");
  EXPECT_EQ(redacted_excerpt("\tkey: [x", 7), "  \tkey: [x\n  \t      ^");
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

// The one reference resolver (RFC 3986 section 5.2): the RFC's own examples, section 5.4.1
// (normal) and 5.4.2 (abnormal), against its base.
TEST(ResolveUrl, TheExamplesOfRfc3986Section54) {
  const std::string base = "http://a/b/c/d;p?q";
  const std::pair<const char*, const char*> normal[] = {
      {"g:h", "g:h"},           {"g", "http://a/b/c/g"},       {"./g", "http://a/b/c/g"},
      {"g/", "http://a/b/c/g/"}, {"/g", "http://a/g"},          {"//g", "http://g"},
      {"?y", "http://a/b/c/d;p?y"}, {"g?y", "http://a/b/c/g?y"}, {"#s", "http://a/b/c/d;p?q#s"},
      {"g#s", "http://a/b/c/g#s"}, {"g?y#s", "http://a/b/c/g?y#s"}, {";x", "http://a/b/c/;x"},
      {"g;x", "http://a/b/c/g;x"}, {"g;x?y#s", "http://a/b/c/g;x?y#s"}, {"", "http://a/b/c/d;p?q"},
      {".", "http://a/b/c/"},    {"./", "http://a/b/c/"},       {"..", "http://a/b/"},
      {"../", "http://a/b/"},    {"../g", "http://a/b/g"},      {"../..", "http://a/"},
      {"../../", "http://a/"},   {"../../g", "http://a/g"}};
  for (const auto& [reference, want] : normal) EXPECT_EQ(resolve_url(base, reference), want) << reference;
  const std::pair<const char*, const char*> abnormal[] = {
      {"../../../g", "http://a/g"},   {"../../../../g", "http://a/g"}, {"/./g", "http://a/g"},
      {"/../g", "http://a/g"},        {"g.", "http://a/b/c/g."},        {".g", "http://a/b/c/.g"},
      {"g..", "http://a/b/c/g.."},    {"..g", "http://a/b/c/..g"},      {"./../g", "http://a/b/g"},
      {"./g/.", "http://a/b/c/g/"},   {"g/./h", "http://a/b/c/g/h"},    {"g/../h", "http://a/b/c/h"},
      {"g;x=1/./y", "http://a/b/c/g;x=1/y"}, {"g;x=1/../y", "http://a/b/c/y"},
      {"g?y/./x", "http://a/b/c/g?y/./x"},   {"g?y/../x", "http://a/b/c/g?y/../x"},
      {"g#s/./x", "http://a/b/c/g#s/./x"},   {"g#s/../x", "http://a/b/c/g#s/../x"},
      {"http:g", "http:g"}};  // a strict parser's answer
  for (const auto& [reference, want] : abnormal) EXPECT_EQ(resolve_url(base, reference), want) << reference;
}

TEST(ResolveUrl, RemoveDotSegmentsIsTheLoopOfSection524) {
  EXPECT_EQ(remove_dot_segments("/a/b/c/./../../g"), "/a/g");
  EXPECT_EQ(remove_dot_segments("mid/content=5/../6"), "mid/6");
  EXPECT_EQ(remove_dot_segments("/.."), "/");
  EXPECT_EQ(remove_dot_segments("/a/b/.."), "/a/");
  EXPECT_EQ(remove_dot_segments("../../x"), "x");
  EXPECT_EQ(remove_dot_segments(""), "");
}

// What its two callers need: CEP-16 shard URLs against a shard index (channel; an empty
// shards_base_url is passed as "." there) and PEP 503/691 links against an index page (pypi).
TEST(ResolveUrl, TheCasesOfShardIndexesAndPackageIndexes) {
  const std::string index = "https://h/c/linux-64/repodata_shards.msgpack.zst";
  EXPECT_EQ(resolve_url(index, "."), "https://h/c/linux-64/");
  EXPECT_EQ(resolve_url(index, "./shards/"), "https://h/c/linux-64/shards/");
  EXPECT_EQ(resolve_url(index, "../shards/"), "https://h/c/shards/");
  EXPECT_EQ(resolve_url(index, "/other/"), "https://h/other/");
  EXPECT_EQ(resolve_url(index, "https://cdn/x/"), "https://cdn/x/");
  EXPECT_EQ(resolve_url(index, "../../../../x"), "https://h/x");
  EXPECT_EQ(resolve_url("https://u:p@h/c/noarch/repodata_shards.msgpack.zst?x=1", "./s/"), "https://u:p@h/c/noarch/s/");
  EXPECT_EQ(resolve_url("file:///srv/chan/linux-64/repodata_shards.msgpack.zst", "shards/"),
            "file:///srv/chan/linux-64/shards/");
  const std::string page = "https://h/simple/demo/";
  EXPECT_EQ(resolve_url(page, "../../files/demo-1.0.whl#sha256=ab"), "https://h/files/demo-1.0.whl#sha256=ab");
  EXPECT_EQ(resolve_url(page, "//cdn.example/demo-1.0.whl"), "https://cdn.example/demo-1.0.whl");
  EXPECT_EQ(resolve_url("https://h", "demo-1.0.whl"), "https://h/demo-1.0.whl");  // 5.2.3: a base without a path
  EXPECT_EQ(resolve_url("http://127.0.0.1:9/simple/demo/#top", "demo-1.0.whl"), "http://127.0.0.1:9/simple/demo/demo-1.0.whl");
  // A scheme starts with a letter (RFC 3986 3.1): `.x:1/...` and `1x:` are relative paths (pip
  // and the WHATWG parser read them so); `x+y:demo` and `https:!/x` have a scheme and are taken
  // as they are (no `//`: pypi's <base href> check then keeps the page's URL).
  EXPECT_EQ(resolve_url(page, ".x:1/demo-1.0.tar.gz"), "https://h/simple/demo/.x:1/demo-1.0.tar.gz");
  EXPECT_EQ(resolve_url(page, "1x:demo"), "https://h/simple/demo/1x:demo");
  EXPECT_EQ(resolve_url(page, "x+y:demo"), "x+y:demo");
  EXPECT_EQ(resolve_url(page, "https:!/x"), "https:!/x");
  // A base without a scheme is no absolute URI: the reference stays as written.
  EXPECT_EQ(resolve_url("/srv/wheels/", "demo-1.0.whl"), "demo-1.0.whl");
  EXPECT_EQ(resolve_url("", "../x"), "../x");
}

TEST(PercentEncode, EncodesAllButTheUnreservedSetAndKeep) {
  EXPECT_EQ(percent_encode("AZaz09-._~"), "AZaz09-._~");
  EXPECT_EQ(percent_encode("a b/c", "/"), "a%20b/c");
  EXPECT_EQ(percent_encode("a b/c"), "a%20b%2Fc");
  EXPECT_EQ(percent_encode("#%?+&=:@!$'()*,;"), "%23%25%3F%2B%26%3D%3A%40%21%24%27%28%29%2A%2C%3B");
  EXPECT_EQ(percent_encode("\xc3\xa9\x01\x7f"), "%C3%A9%01%7F");  // UTF-8 byte by byte, upper-case hex
}

TEST(PercentDecode, DecodesEscapesAndKeepsEverythingElse) {
  EXPECT_EQ(percent_decode("/a%20b/c%2b%2B"), "/a b/c++");
  EXPECT_EQ(percent_decode("%C3%A9"), "\xc3\xa9");
  // No escapes: unchanged (paths lockfiles hold from before encoding). A lone '%' stays.
  for (const char* s : {"", "/plain/path", "/a b/#x?y", "100%", "%", "%4", "%zz", "%%41"})
    EXPECT_EQ(percent_decode(s), std::string(s) == "%%41" ? "%A" : std::string(s)) << s;
}

TEST(FileUrl, EncodesPathsAsMambaAndRfc8089) {
  EXPECT_EQ(file_url_from_path("/srv/chan"), "file:///srv/chan");
  EXPECT_EQ(file_url_from_path("/tmp/x/my chan"), "file:///tmp/x/my%20chan");
  EXPECT_EQ(file_url_from_path("/tmp/a#b/c%d/e?f"), "file:///tmp/a%23b/c%25d/e%3Ff");
  EXPECT_EQ(file_url_from_path("/tmp/caf\xc3\xa9/x-1.0+cpu-0.conda"), "file:///tmp/caf%C3%A9/x-1.0%2Bcpu-0.conda");
  EXPECT_EQ(file_url_from_path("/"), "file:///");
  EXPECT_THROW((void)file_url_from_path("relative/dir"), std::invalid_argument);
  EXPECT_THROW((void)file_url_from_path(""), std::invalid_argument);
}

TEST(FileUrl, DecodesBackToThePath) {
  for (const char* p : {"/srv/chan", "/tmp/x/my chan", "/tmp/a#b/c%d/e?f", "/tmp/caf\xc3\xa9/x+y", "/a%20b", "/"}) {
    auto back = path_from_file_url(file_url_from_path(p));
    ASSERT_TRUE(back) << p << ": " << back.error().to_string();
    EXPECT_EQ(*back, p);
  }
  EXPECT_EQ(*path_from_file_url("file://localhost/srv/my%20chan"), "/srv/my chan");
  EXPECT_EQ(*path_from_file_url("FILE:///srv/a%2fb"), "/srv/a/b");
  // Lockfiles written before URLs were encoded: a raw space reads as itself.
  EXPECT_EQ(*path_from_file_url("file:///tmp/x/my chan/linux-64/a-1-0.conda"), "/tmp/x/my chan/linux-64/a-1-0.conda");
}

TEST(FileUrl, RefusesWhatIsNoLocalPath) {
  struct Case {
    const char* url;
    const char* message;
  };
  for (const Case& c : {Case{"https://host/chan", "not a file:// URL"}, Case{"/srv/chan", "not a file:// URL"},
                        Case{"file://server/share/chan", "file URL names the host 'server'; envlock reads local paths only"},
                        Case{"file://", "file URL without a path"},
                        Case{"file:///a%00b", "file URL holds a NUL byte (%00), which no path can hold"}}) {
    auto r = path_from_file_url(c.url);
    ASSERT_FALSE(r) << c.url;
    EXPECT_EQ(r.error().kind, ErrorKind::Parse) << c.url;
    EXPECT_EQ(r.error().message, c.message) << c.url;
    EXPECT_EQ(r.error().where, c.url);
  }
  // Credentials in a refused URL never reach the message.
  auto r = path_from_file_url("file://user:secret@server/x");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().to_string().find("secret"), std::string::npos) << r.error().to_string();
}

// Non-ASCII hosts shown to a reviewer as IDNA A-labels, against known vectors (RFC 3492 section
// 7.1 (B), Chinese simplified: "ihqwcrb4cv8a8dqg056pqjye"; RFC 5891's `xn--` prefix; the
// German and Japanese examples of the IDNA test data, e.g. bücher -> xn--bcher-kva).
TEST(AsciiHost, NonAsciiHostsBecomeALabels) {
  EXPECT_EQ(ascii_host_url("https://b\u00fccher.example/simple"), "https://xn--bcher-kva.example/simple");
  EXPECT_EQ(ascii_host_url("https://m\u00fcnchen.de"), "https://xn--mnchen-3ya.de");
  EXPECT_EQ(ascii_host_url("https://\u4f8b\u3048.\u30c6\u30b9\u30c8/x"), "https://xn--r8jz45g.xn--zckzah/x");
  EXPECT_EQ(ascii_host_url("https://\u4ed6\u4eec\u4e3a\u4ec0\u4e48\u4e0d\u8bf4\u4e2d\u6587.cn/"),
            "https://xn--ihqwcrb4cv8a8dqg056pqjye.cn/");
  // A homoglyph (Cyrillic U+043E for `o`), behind userinfo and before a port; the path is untouched.
  EXPECT_EQ(ascii_host_url("https://u@files.pythonh\u043ested.org:443/p\u00e4th?q=\u00e9#f"),
            "https://u@files.xn--pythonhsted-xnj.org:443/p\u00e4th?q=\u00e9#f");
  EXPECT_EQ(ascii_host_url("https://pyp%D1%96.org/simple"), "https://xn--pyp-lhd.org/simple");  // percent-encoded
  EXPECT_EQ(ascii_host_url("https://M\u00fcnchen.DE/"), "https://xn--mnchen-3ya.de/");  // ASCII case folded
  // Unchanged: ASCII hosts, IPv6 literals, no URL.
  for (const char* u : {"https://conda.anaconda.org/conda-forge", "http://[::1]:8080/x", "file:///home/\u00e9/chan",
                        "conda-forge", "https://xn--bcher-kva.example/"})
    EXPECT_EQ(ascii_host_url(u), u) << u;
  // What IDNA2008 refuses is shown code point by code point, never raw and never mapped away: a
  // zero-width space, a tag character, a symbol, upper-case non-ASCII.
  EXPECT_EQ(ascii_host_url("https://pypi\u200b.org/"), "https://pypi\\u{200b}.org/");
  EXPECT_EQ(ascii_host_url("https://evil\U000E0041.example/"), "https://evil\\u{e0041}.example/");
  EXPECT_EQ(ascii_host_url("https://a\u2620.example/"), "https://a\\u{2620}.example/");
  EXPECT_EQ(ascii_host_url("https://\u00c4\u00d6\u00dc.de/"), "https://\\u{00c4}\\u{00d6}\\u{00dc}.de/");
  EXPECT_EQ(ascii_hosts("channel https://conda.anaconda.org/c -> https://conda.anaconda.\u043erg/c (moved)"),
            "channel https://conda.anaconda.org/c -> https://conda.anaconda.xn--rg-emc/c (moved)");
}

}  // namespace
}  // namespace envlock
