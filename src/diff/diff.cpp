// Classification of package changes between two lockfiles (see include/envlock/diff.hpp).
#include "envlock/diff.hpp"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <deque>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "envlock/match_spec.hpp"
#include "envlock/pip.hpp"
#include "envlock/text.hpp"
#include "envlock/url.hpp"
#include "envlock/version.hpp"

namespace envlock {

namespace {

constexpr std::string_view kKindNames[] = {
    "re-uploaded", "hash-changed",    "variant-switch",    "added",          "removed",
    "downgraded",  "upgraded",        "rebuilt",           "channel-changed", "host-floor-raised",
    "source-changed", "metadata-changed", "license-changed", "inputs-changed",
};

constexpr std::string_view kHostFloorNames[] = {"__glibc", "__cuda", "__linux", "__osx"};

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= s.size()) {
    auto pos = s.find(sep, start);
    if (pos == std::string_view::npos) pos = s.size();
    out.emplace_back(s.substr(start, pos - start));
    start = pos + 1;
  }
  return out;
}

// The package name a dependency spec names (lower case, a `channel::` prefix dropped), without
// allocating when the name is already lower case: a view into `spec`, else into `scratch`. Read
// from the text, not through MatchSpec::parse: it runs for every dependency of every record.
std::string_view spec_name(std::string_view spec, std::string& scratch) {
  std::size_t a = 0, b = spec.size();
  while (a < b && std::isspace(static_cast<unsigned char>(spec[a]))) ++a;
  while (b > a && std::isspace(static_cast<unsigned char>(spec[b - 1]))) --b;
  std::size_t i = a;
  bool lower_already = true;  // ASCII without upper case: ascii_lower() would not change it
  for (; i < b; ++i) {
    const char c = spec[i];
    if (c == '=' || c == '<' || c == '>' || c == '!' || c == '~' || c == '[' ||
        std::isspace(static_cast<unsigned char>(c)))
      break;
    lower_already = lower_already && !(c >= 'A' && c <= 'Z') && (static_cast<unsigned char>(c) < 0x80);
  }
  std::string_view name = spec.substr(a, i - a);
  if (!lower_already) {
    scratch = ascii_lower(std::string(name));
    name = scratch;
  }
  if (auto c = name.rfind("::"); c != std::string_view::npos) name = name.substr(c + 2);
  return name;
}

// The lowest version a constraint admits, as a floor, walked over its VersionSpec tree: `==`,
// `>=`, `>`, starts-with (`2.17.*`, `=2.17`) and `~=` floor at their version; `,` (And) at the
// highest floor of its terms; `|` (Or) at the lowest of its alternatives; `<`, `<=`, `!=`, `*`,
// globs and regexes at 0.
Version version_floor(const VersionSpec& spec) {
  using Op = VersionSpec::Op;
  switch (spec.op()) {
    case Op::Eq:
    case Op::Ge:
    case Op::Gt:
    case Op::StartsWith:
    case Op::Compatible: return spec.version();
    case Op::And: {
      Version best;  // "0"
      for (const auto& term : spec.children())
        if (Version f = version_floor(term); f > best) best = std::move(f);
      return best;
    }
    case Op::Or: {
      std::optional<Version> lowest;
      for (const auto& alt : spec.children())
        if (Version f = version_floor(alt); !lowest || f < *lowest) lowest = std::move(f);
      return lowest.value_or(Version{});
    }
    default: return Version{};
  }
}

// The version floor of a dependency read as the MatchSpec it is (`__glibc >=2.17,<3.0.a0`,
// `conda-forge::cuda-version >=12`); 0 when it has no version or does not parse.
Version dependency_floor(std::string_view dep) {
  const auto spec = MatchSpec::parse(dep);
  return spec && spec->version ? version_floor(*spec->version) : Version{};
}

bool is_host_floor_name(std::string_view name) {
  return std::find(std::begin(kHostFloorNames), std::end(kHostFloorNames), name) != std::end(kHostFloorNames);
}

using Floors = std::map<std::string, Version>;

Floors record_floors(const PackageRecord& r) {
  Floors out;
  for (const auto& dep : r.depends) {
    if (dep.find("__") == std::string::npos) continue;  // not a virtual package: no spec to read
    std::string scratch;
    const std::string_view name = spec_name(dep, scratch);
    if (!is_host_floor_name(name)) continue;
    Version f = dependency_floor(dep);
    auto it = out.find(std::string(name));
    if (it == out.end() || f > it->second) out[std::string(name)] = f;
  }
  return out;
}

// CUDA major from the digits after "cuda"/"cu": "118" -> 11, "120" -> 12, "12" -> 12, "92" -> 9.
std::string cuda_major(std::string_view digits) {
  if (digits.empty()) return {};
  if (digits.size() >= 3) return std::string(digits.substr(0, 2));
  if (digits[0] == '1') return std::string(digits);
  return std::string(digits.substr(0, 1));
}

std::string leading_digits(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
  return std::string(s.substr(0, i));
}

// Variant tags from the build string and track_features.
std::set<std::string> build_variants(const PackageRecord& r, bool with_track_features) {
  std::set<std::string> tags;
  for (const auto& token : split(ascii_lower(r.build), '_')) {
    if (token.starts_with("cuda")) {
      tags.insert("cuda");
      if (auto m = cuda_major(leading_digits(std::string_view(token).substr(4))); !m.empty()) {
        tags.insert("cuda" + m);
      }
    } else if (token.size() >= 4 && token.starts_with("cu") &&
               std::isdigit(static_cast<unsigned char>(token[2]))) {
      std::string d = leading_digits(std::string_view(token).substr(2));
      if (d.size() >= 2 && d.size() <= 3) {
        tags.insert("cuda");
        tags.insert("cuda" + cuda_major(d));
      }
    }
    if (token.starts_with("cpu")) tags.insert("cpu");
    if (token == "gpu") tags.insert("cuda");
    if (token.find("nomkl") != std::string::npos) tags.insert("nomkl");
    else if (token.find("mkl") != std::string::npos) tags.insert("mkl");
    for (const char* blas : {"openblas", "blis", "accelerate", "netlib"}) {
      if (token.find(blas) != std::string::npos) tags.insert(blas);
    }
  }
  if (with_track_features)
    for (const auto& f : r.track_features) tags.insert(ascii_lower(f));
  return tags;
}

// Variant tags from depends: `cuda-version` pins the CUDA major; `__cuda` marks a GPU build.
std::set<std::string> depends_variants(const PackageRecord& r) {
  std::set<std::string> tags;
  for (const auto& dep : r.depends) {
    std::string scratch;
    const std::string_view name = spec_name(dep, scratch);
    if (name == "__cuda") tags.insert("cuda");
    if (name == "cuda-version") {
      Version f = dependency_floor(dep);
      const auto& rel = f.release();
      if (!rel.empty() && !rel[0].empty() && rel[0][0].is_number && rel[0][0].number > 0) {
        tags.insert("cuda");
        tags.insert("cuda" + std::to_string(rel[0][0].number));
      }
    }
  }
  return tags;
}

std::string normalize_channel(std::string c) {
  while (!c.empty() && c.back() == '/') c.pop_back();
  if (!c.empty() && c.find("://") == std::string::npos) c = "https://conda.anaconda.org/" + c;
  return c;
}

std::string extension_of(const std::string& file) {
  if (file.ends_with(".tar.bz2")) return ".tar.bz2";
  if (file.ends_with(".conda")) return ".conda";
  return {};
}

std::string join(const std::set<std::string>& s, const char* sep) {
  std::string out;
  for (const auto& x : s) out += (out.empty() ? "" : sep) + x;
  return out;
}

PackageSide side_of(const LockedPackage& p, const std::set<std::string>& variants) {
  PackageSide s;
  s.version = p.version.to_string();
  s.build = p.build;
  s.channel = p.channel;
  s.url = p.url;
  s.sha256 = p.sha256;
  s.md5 = p.md5;
  s.license = p.license;
  s.size = p.size;
  s.variants.assign(variants.begin(), variants.end());
  return s;
}

PackageSide side_of(const PipPackage& p) {
  PackageSide s;
  s.version = p.version;
  s.url = redact_url(p.url);
  s.sha256 = p.sha256;
  s.source = pip_source_info(p).to_string();
  return s;
}

int compare_versions(const std::string& a, const std::string& b) {
  auto va = Version::parse(a);
  auto vb = Version::parse(b);
  if (va && vb) {
    auto c = va->compare(*vb);
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  return a < b ? -1 : (a > b ? 1 : 0);
}

// A pip entry that is a requirement rather than a resolved version.
bool unresolved(const PipPackage& p) { return p.version.empty() && !p.requirement.empty(); }

// How `pinned` (a version) fares against the unresolved `req`; nullopt when it meets it (or the
// requirement cannot be read, see check_pip_requirement). `req_is_old`: the requirement is the
// old side, so a version below its lower bound went down (downgraded); on the new side it is
// the new requirement that went up. An excluded version or another source: the direction is
// unknown, reported as downgraded / channel-changed for a human to look at.
// Requirement and URLs are compared and shown credential-free (redact_text), so two sides that
// differ only in a token are no change. A bare archive URL line (`https://host/pkg-1.0.tar.gz`,
// named by its file name) is checked as the direct reference `pkg @ URL` it stands for.
std::optional<ChangeKind> unmet_requirement(const PipPackage& req, const PipPackage& pinned, bool req_is_old,
                                            std::vector<std::string>& notes) {
  using Outcome = PipRequirementCheck::Outcome;
  const std::string text = redact_text(req.requirement);
  const bool bare_url = !req.name.empty() && !req.url.empty() && text.starts_with(redact_url(req.url));
  PipPackage installed = pinned;
  installed.url = redact_url(pinned.url);
  const PipRequirementCheck check = check_pip_requirement(bare_url ? req.name + " @ " + text : text, installed);
  if (check.outcome == Outcome::Met || check.outcome == Outcome::Unknown) return std::nullopt;
  const std::string have = installed.version + (installed.url.empty() ? "" : " from " + installed.url);
  notes.push_back("requirement `" + text + "` is not met by " + have);
  switch (check.outcome) {
    case Outcome::TooLow: return req_is_old ? ChangeKind::Downgraded : ChangeKind::Upgraded;
    case Outcome::TooHigh: return req_is_old ? ChangeKind::Upgraded : ChangeKind::Downgraded;
    case Outcome::OtherSource: return ChangeKind::ChannelChanged;
    default: return ChangeKind::Downgraded;
  }
}

std::string short_hash(const std::string& h) { return h.size() > 12 ? h.substr(0, 12) : h; }

// Two digests as a note shows them, `<a>… -> <b>…`: 12 hex digits each, or as many more as it
// takes for the two to read differently (four past the first digit that differs), so two hashes
// that share their first 12 digits never print as "X -> X" (attack 24, A5). Whole when short.
std::size_t hash_digits(const std::string& a, const std::string& b) {
  std::size_t differ = 0;
  while (differ < a.size() && differ < b.size() && a[differ] == b[differ]) ++differ;
  return differ == a.size() && differ == b.size() ? 12 : std::max<std::size_t>(12, differ + 4);
}
std::string cut_hash(const std::string& h, std::size_t digits) { return h.size() > digits ? h.substr(0, digits) + "…" : h; }
std::string hash_change(const std::string& a, const std::string& b) {
  const std::size_t digits = hash_digits(a, b);
  return cut_hash(a, digits) + " -> " + cut_hash(b, digits);
}

// A MatchSpec or requirement as compared between formats: runs of white space as one space, a
// bare `*` version dropped (conda-lock writes `{name: '*'}` for what repodata has as `name`).
std::string comparable_spec(std::string_view spec) {
  std::string out;
  for (char c : spec) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      if (!out.empty() && out.back() != ' ') out += ' ';
    } else {
      out += c;
    }
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  if (out.ends_with(" *") && std::count(out.begin(), out.end(), ' ') == 1) out.resize(out.size() - 2);
  return out;
}

// The specs of one field that differ between the sides, as a note: "depends -numpy >=1.21 +numpy
// >=1.21,<2"; empty when the two lists hold the same specs (order and spacing aside).
// A PEP 508 requirement as compared between sources: pixi.lock copies `requires_dist` from the
// index's metadata, a prefix has METADATA's own spelling; white space, quote style and case (of
// names and markers alike) are no change.
// The comma-separated clauses of a version specifier are a set (PEP 440: `<2,>=1` is `>=1,<2`,
// as uv and pip each write it): sorted here.
std::string comparable_requirement(std::string_view req) {
  std::string out;
  for (char c : req) {
    if (std::isspace(static_cast<unsigned char>(c))) continue;
    out += c == '"' ? '\'' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  const auto semi = out.find(';');
  std::string spec = out.substr(0, semi), marker = semi == std::string::npos ? "" : out.substr(semi);
  const auto op = spec.find_first_of("<>=!~");
  if (op == std::string::npos || spec.find('@') != std::string::npos) return out;
  std::vector<std::string> clauses = split(std::string_view(spec).substr(op), ',');
  std::sort(clauses.begin(), clauses.end());
  std::string sorted = spec.substr(0, op);
  for (std::size_t i = 0; i < clauses.size(); ++i) sorted += (i ? "," : "") + clauses[i];
  return sorted + marker;
}

std::string list_change(const char* field, const std::vector<std::string>& olds, const std::vector<std::string>& news,
                        std::string (*comparable)(std::string_view) = comparable_spec) {
  std::map<std::string, std::string> a, b;  // comparable form -> as written (spaces collapsed)
  for (const auto& x : olds) a.emplace(comparable(x), comparable_spec(x));
  for (const auto& x : news) b.emplace(comparable(x), comparable_spec(x));
  bool same = a.size() == b.size();
  for (auto i = a.begin(), j = b.begin(); same && i != a.end(); ++i, ++j) same = i->first == j->first;
  if (same) return {};
  std::string note = field;
  for (const auto& [k, x] : a)
    if (!b.count(k)) note += " -" + redact_text(x);
  for (const auto& [k, x] : b)
    if (!a.count(k)) note += " +" + redact_text(x);
  return note;
}

std::string_view noarch_name(NoArchKind k) {
  switch (k) {
    case NoArchKind::Python: return "python";
    case NoArchKind::Generic: return "generic";
    case NoArchKind::None: break;
  }
  return "(none)";
}

// How the pip sources of one package differ, as a note; empty when they do not. An index wheel
// and its URL are one source (a lockfile names the wheel an index served; PEP 610 writes no
// direct_url.json for an index install, so a prefix names none); two URLs of one version are
// the sha256 / file comparison's business. A local path written relative on one side and as a
// file: URL on the other cannot be told apart here and counts as the same.
std::string pip_source_change(const PipPackage& o, const PipPackage& n) {
  using K = PipSourceInfo::Kind;
  const PipSourceInfo a = pip_source_info(o), b = pip_source_info(n);
  auto registry = [](K k) { return k == K::Index || k == K::Url; };
  // Another subdirectory of one repository or archive builds another project (PEP 610
  // `subdirectory`; pixi compares it too: GitSubdirectoryMismatch, pixi_record's pinned_source.rs).
  if (a.subdirectory != b.subdirectory) return "source " + a.to_string() + " -> " + b.to_string();
  if (registry(a.kind) && registry(b.kind)) return {};
  // Two pins listed by one index or find-links folder (envlock.lock's `index`, issue 20): the
  // file changes with the version, the source does not (another index is the `index` field's).
  auto wheel_file = [](K k) { return k == K::Index || k == K::Url || k == K::Path; };
  if (!o.index.empty() && redact_url(o.index) == redact_url(n.index) && wheel_file(a.kind) && wheel_file(b.kind)) return {};
  if (a.kind == b.kind) {
    if (a.kind == K::Vcs) {
      if (a.location == b.location && (a.commit == b.commit || a.commit.empty() || b.commit.empty())) return {};
    } else {
      const bool a_url = a.location.starts_with("file:"), b_url = b.location.starts_with("file:");
      if (a.location == b.location || a_url != b_url || a.location.empty() || b.location.empty()) return {};
    }
  }
  return "source " + a.to_string() + " -> " + b.to_string();
}


// A pip archive URL without fragment and credentials: the file an index serves.
std::string pip_file_url(const std::string& url) { return redact_url(url.substr(0, url.find('#'))); }

// The host a pip archive URL names, as scheme://host[:port] (the index a wheel came from, as a
// conda record's channel); empty for a URL without one (a path, a file: URL).
std::string pip_url_host(const std::string& url) {
  const std::string u = pip_file_url(url);
  const auto scheme = u.find("://");
  if (scheme == std::string::npos || u.starts_with("file:")) return {};
  const auto end = u.find_first_of("/?", scheme + 3);
  return ascii_lower(u.substr(0, end));
}

// The archive's file name: the last segment of the URL's path, percent-decoded (RFC 3986): pixi
// writes `torch-2.1.2%2Bcu121-...whl` where pip and uv write `+`, and one file must not pass for
// another under a second spelling (a new-user attack, session 10).
std::string pip_url_file(const std::string& url) {
  std::string u = pip_file_url(url);
  if (auto q = u.find('?'); q != std::string::npos) u.resize(q);
  return percent_decode(u.substr(u.rfind('/') + 1));
}

// The accelerator a pip build is made for, as PyTorch's indexes name it: the PEP 440 local label
// (`2.1.2+cu121`, `+cpu`, `+rocm5.6`) or, without one, the index folder of the URL
// (`download.pytorch.org/whl/cu121/...`); empty when neither names one.
std::string pip_variant(const PipPackage& p) {
  auto variant = [](std::string label) -> std::string {
    label = ascii_lower(label);
    if (label == "cpu" || label.starts_with("rocm") || label.starts_with("xpu")) return label;
    if (label.size() > 2 && label.starts_with("cu") && std::isdigit(static_cast<unsigned char>(label[2]))) return label;
    return {};
  };
  if (auto plus = p.version.find('+'); plus != std::string::npos) return variant(p.version.substr(plus + 1));
  const std::string u = pip_file_url(p.url);
  if (auto whl = u.find("/whl/"); whl != std::string::npos) {
    const auto end = u.find('/', whl + 5);
    if (end != std::string::npos) return variant(u.substr(whl + 5, end - whl - 5));
  }
  return {};
}

// PEP 440 order of two pip versions: the public version in envlock's order (which agrees with
// PEP 440 for release, pre-, post- and dev-releases), then the local label: a version without
// one sorts before the same version with one, and labels compare segment by segment (split at
// '.', '-', '_'), a number above a string, numbers as integers, strings case-blind, a shorter
// label that is a prefix first ("Local version identifiers").
int compare_pip_versions(const std::string& a, const std::string& b) {
  const auto pa = a.find('+'), pb = b.find('+');
  if (const int c = compare_versions(a.substr(0, pa), b.substr(0, pb)); c != 0) return c;
  if (pa == std::string::npos || pb == std::string::npos)
    return pa == pb ? 0 : (pa == std::string::npos ? -1 : 1);
  auto segments = [](const std::string& label) {
    std::vector<std::string> out(1);
    for (const char c : label) {
      if (c == '.' || c == '-' || c == '_') out.emplace_back();
      else out.back() += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    return out;
  };
  const auto la = segments(a.substr(pa + 1)), lb = segments(b.substr(pb + 1));
  for (std::size_t i = 0; i < la.size() && i < lb.size(); ++i) {
    const bool na = !la[i].empty() && std::all_of(la[i].begin(), la[i].end(), ::isdigit);
    const bool nb = !lb[i].empty() && std::all_of(lb[i].begin(), lb[i].end(), ::isdigit);
    if (na != nb) return na ? 1 : -1;
    if (na) {
      const auto ta = la[i].substr(std::min(la[i].find_first_not_of('0'), la[i].size() - 1));
      const auto tb = lb[i].substr(std::min(lb[i].find_first_not_of('0'), lb[i].size() - 1));
      if (ta.size() != tb.size()) return ta.size() < tb.size() ? -1 : 1;
      if (ta != tb) return ta < tb ? -1 : 1;
    } else if (la[i] != lb[i]) {
      return la[i] < lb[i] ? -1 : 1;
    }
  }
  return la.size() == lb.size() ? 0 : (la.size() < lb.size() ? -1 : 1);
}

// Two pip archives of the same version, as a conda record's archive is compared (docs/review.md,
// "pip archives"): the same URL with another sha256 is re-uploaded; the same file name (PyPI
// never serves two files of one name) with another sha256 is hash-changed (the archive behind the
// pin was swapped); another host is channel-changed, whatever the sha256; another file name (another
// wheel tag, an sdist) with another sha256 is rebuilt. A side without a URL (an index install in a
// prefix) has no file to compare: a sha256 that differs from the other side's is hash-changed (and
// re-uploaded when neither names a URL, the same index name).
void pip_file_change(const PipPackage& o, const PipPackage& n, bool pip_hashes, std::set<ChangeKind>& kinds,
                     std::vector<std::string>& notes) {
  using K = PipSourceInfo::Kind;
  auto archive = [](const PipPackage& p) {
    const K k = pip_source_info(p).kind;
    return k == K::Index || k == K::Url;
  };
  const bool same_url = pip_file_url(o.url) == pip_file_url(n.url);
  const bool hashes_differ = !o.sha256.empty() && !n.sha256.empty() && o.sha256 != n.sha256;
  if (pip_hashes && !o.sha256.empty() && n.sha256.empty()) {
    kinds.insert(ChangeKind::HashChanged);
    notes.push_back("sha256 " + short_hash(o.sha256) + "… removed: the archive would be installed unverified");
  }
  const std::string hashes = "sha256 " + hash_change(o.sha256, n.sha256);
  // Another host is an archive's business: of a VCS, path or editable source, source-changed tells it.
  const std::string oh = pip_url_host(o.url), nh = pip_url_host(n.url);
  if (archive(o) && archive(n) && !same_url && oh != nh && !oh.empty() && !nh.empty()) {  // an index install names none
    kinds.insert(ChangeKind::ChannelChanged);
    notes.push_back("index host " + oh + " -> " + nh);
  }
  // The sha256 is what install verifies, whatever spelling the source has: a locked wheel's
  // relative path (find-links), a file: URL, or a pin whose `requirement` names another URL than
  // its `url` (install fetches `url`) — a swapped archive is a red flag on every one of them
  // (attack 23 F1, F4).
  if (!hashes_differ) return;
  if (same_url) {
    kinds.insert(ChangeKind::ReUploaded);
    notes.push_back("re-uploaded: same URL, " + hashes);
  } else if (o.url.empty() || n.url.empty() || pip_url_file(o.url) == pip_url_file(n.url)) {
    kinds.insert(ChangeKind::HashChanged);
    notes.push_back(o.url.empty() || n.url.empty() ? hashes : "same file " + pip_url_file(n.url) + ", " + hashes);
  } else {
    kinds.insert(ChangeKind::Rebuilt);
    notes.push_back("another distribution file of the same version: " + pip_url_file(o.url) + " -> " +
                    pip_url_file(n.url));
  }
}

// The depends graph of one platform, for "pulled_by": names numbered once, edges as indices.
// Names are views into the platform's records, which outlive the graph.
class DependsGraph {
 public:
  DependsGraph(const LockedPlatform* plat, const std::vector<std::string>& requested) {
    if (plat == nullptr) return;
    index_.reserve(plat->packages.size());
    std::vector<int> ids;  // per package: its name's number
    ids.reserve(plat->packages.size());
    for (const auto& p : plat->packages) ids.push_back(id_of(p.name, true));
    parents_.resize(names_.size());
    std::vector<char> has_parent(names_.size(), 0);
    std::string scratch;
    for (std::size_t i = 0; i < plat->packages.size(); ++i) {
      const auto& p = plat->packages[i];
      const int child_of = ids[i];
      for (const auto& dep : p.depends) {
        const int d = id_of(spec_name(dep, scratch), false);
        if (d < 0 || d == child_of) continue;
        parents_[static_cast<std::size_t>(d)].push_back(child_of);
        has_parent[static_cast<std::size_t>(d)] = 1;
      }
    }
    root_.assign(names_.size(), 0);
    bool any_root = false;
    for (const auto& r : requested) {
      const int n = id_of(spec_name(r, scratch), false);
      if (n < 0) continue;
      root_[static_cast<std::size_t>(n)] = 1;
      any_root = true;
    }
    if (!any_root)
      for (std::size_t n = 0; n < names_.size(); ++n) root_[n] = has_parent[n] ? 0 : 1;
  }

  [[nodiscard]] std::vector<std::string> pulled_by(const std::string& name) const {
    const auto it = index_.find(name);
    if (it == index_.end()) return {};
    std::set<std::string_view> found;
    std::vector<char> seen(names_.size(), 0);
    std::vector<int> queue{it->second};
    seen[static_cast<std::size_t>(it->second)] = 1;
    for (std::size_t head = 0; head < queue.size(); ++head) {
      const auto n = static_cast<std::size_t>(queue[head]);
      if (root_[n]) found.insert(names_[n]);
      for (int parent : parents_[n]) {
        if (!seen[static_cast<std::size_t>(parent)]) {
          seen[static_cast<std::size_t>(parent)] = 1;
          queue.push_back(parent);
        }
      }
    }
    return {found.begin(), found.end()};
  }

 private:
  int id_of(std::string_view name, bool add) {
    auto it = index_.find(name);
    if (it != index_.end()) return it->second;
    if (!add) return -1;
    index_.emplace(name, static_cast<int>(names_.size()));
    names_.push_back(name);
    return static_cast<int>(names_.size()) - 1;
  }

  std::unordered_map<std::string_view, int> index_;
  std::vector<std::string_view> names_;
  std::vector<std::vector<int>> parents_;  ///< per name: the packages that depend on it
  std::vector<char> root_;                 ///< per name: a requested spec (or, without any, no parent)
};

/// A platform's packages by name, in name order; for a name listed twice the last one (as a
/// map filled in order would keep).
std::vector<const LockedPackage*> by_name(const std::vector<LockedPackage>& packages) {
  std::vector<const LockedPackage*> out;
  out.reserve(packages.size());
  for (const auto& p : packages) out.push_back(&p);
  auto less = [](const LockedPackage* a, const LockedPackage* b) { return a->name < b->name; };
  auto strictly_rising = [](const LockedPackage* a, const LockedPackage* b) { return !(a->name < b->name); };
  if (std::adjacent_find(out.begin(), out.end(), strictly_rising) == out.end()) return out;  // readers sort
  std::stable_sort(out.begin(), out.end(), less);
  std::vector<const LockedPackage*> unique;
  for (std::size_t i = 0; i < out.size(); ++i)
    if (i + 1 == out.size() || out[i]->name != out[i + 1]->name) unique.push_back(out[i]);
  return unique;
}

Floors environment_floors(const LockedPlatform* plat) {
  // The highest floor of every record's depends, as record_floors would give them per record.
  // Records repeat the same few virtual-package specs ("__glibc >=2.17"): each text is read once.
  Floors out;
  if (plat == nullptr) return out;
  struct Parsed {
    bool host = false;  ///< a __glibc/__cuda/__linux/__osx requirement
    std::string name;
    Version floor;
  };
  std::unordered_map<std::string_view, Parsed> parsed;
  for (const auto& p : plat->packages) {
    for (const auto& dep : p.depends) {
      if (dep.find("__") == std::string::npos) continue;  // not a virtual package: no spec to split
      auto [it, added] = parsed.try_emplace(dep);
      Parsed& v = it->second;
      if (added) {
        std::string scratch;
        const std::string_view name = spec_name(dep, scratch);
        v.host = is_host_floor_name(name);
        if (v.host) {
          v.floor = dependency_floor(dep);
          v.name = std::string(name);
        }
      }
      if (!v.host) continue;
      auto e = out.find(v.name);
      if (e == out.end()) out.emplace(v.name, v.floor);
      else if (v.floor > e->second) e->second = v.floor;
    }
  }
  return out;
}

// The fields a platform's records hold, read from the records themselves (diff_lockfiles
// without RecordedFields): a field counts when one record has it.
RecordedFields held_fields(const LockedPlatform* p) {
  // track_features count as held: a record that drops them is a variant switch, and every format
  // but @EXPLICIT and conda-lock writes them (the CLI tells those apart by their format). noarch,
  // build number and site-packages path are not: pixi.lock writes them only for some records.
  RecordedFields r{false, false, true, false, false, false, false, false};
  r.sha256 = r.pip_hashes = false;
  r.channels = r.virtual_packages = r.pypi_indexes = false;
  if (p == nullptr) return r;
  r.channels = !p->channels.empty();
  r.virtual_packages = !p->virtual_packages.empty();
  r.pypi_indexes = !p->pypi_indexes.empty();
  for (const auto& x : p->packages) r.sha256 = r.sha256 || !x.sha256.empty();
  for (const auto& x : p->pip) r.pip_hashes = r.pip_hashes || !x.sha256.empty();
  for (const auto& x : p->packages) {
    r.depends = r.depends || !x.depends.empty();
    r.constrains = r.constrains || !x.constrains.empty();
  }
  for (const auto& x : p->pip) {
    r.requires_dist = r.requires_dist || !x.requires_dist.empty();
    r.requires_python = r.requires_python || !x.requires_python.empty();
  }
  return r;
}

RecordedFields both_hold(const RecordedFields& a, const RecordedFields& b) {
  return RecordedFields{a.depends && b.depends,
                        a.constrains && b.constrains,
                        a.track_features && b.track_features,
                        a.noarch && b.noarch,
                        a.build_number && b.build_number,
                        a.python_site_packages_path && b.python_site_packages_path,
                        a.requires_dist && b.requires_dist,
                        a.requires_python && b.requires_python,
                        a.categories && b.categories,
                        a.sha256 && b.sha256,
                        a.pip_hashes && b.pip_hashes,
                        a.channels && b.channels,
                        a.virtual_packages && b.virtual_packages,
                        a.pypi_indexes && b.pypi_indexes};
}

// The solve inputs of a platform held on both sides that differ, one change each (kind
// inputs-changed, `input`): the channel list and its order, the channels' names, each virtual
// package assumed, the PyPI indexes (docs/review.md, "Solve inputs").
void diff_inputs(PlatformDiff& out, const LockedPlatform& o, const LockedPlatform& n, const RecordedFields& both) {
  auto input = [&](std::string name, std::optional<PackageSide> old_side, std::optional<PackageSide> new_side,
                   std::string note) {
    PackageChange c;
    c.name = std::move(name);
    c.input = true;
    c.kind = ChangeKind::InputsChanged;
    c.old_side = std::move(old_side);
    c.new_side = std::move(new_side);
    if (!note.empty()) c.notes.push_back(std::move(note));
    out.changes.push_back(std::move(c));
  };
  auto listed = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
    return s.empty() ? std::string("(none)") : s;
  };
  auto normalized = [](const std::vector<std::string>& v) {
    std::vector<std::string> urls;
    for (const auto& c : v) urls.push_back(normalize_channel(c));
    return urls;
  };
  if (both.channels) {
    const auto oc = normalized(o.channels), nc = normalized(n.channels);
    if (oc != nc) {
      const bool reordered = std::is_permutation(oc.begin(), oc.end(), nc.begin(), nc.end());
      input("channels", std::nullopt, std::nullopt,
            std::string(reordered ? "channel order " : "channels ") + listed(o.channels) + " -> " + listed(n.channels));
    }
    // The name each channel is given (`{url: URL, name: NAME}`), by channel: one change, a note
    // per channel whose name differs.
    struct Names {
      std::string shown, old_name, new_name;
    };
    std::map<std::string, Names> names;
    for (std::size_t i = 0; i < o.channel_names.size() && i < oc.size(); ++i)
      if (!o.channel_names[i].empty()) names[oc[i]] = {o.channels[i], o.channel_names[i], ""};
    for (std::size_t i = 0; i < n.channel_names.size() && i < nc.size(); ++i) {
      if (n.channel_names[i].empty()) continue;
      Names& e = names[nc[i]];
      if (e.shown.empty()) e.shown = n.channels[i];
      e.new_name = n.channel_names[i];
    }
    std::vector<std::string> renamed;
    auto shown = [](const std::string& v) { return v.empty() ? std::string("(none)") : v; };
    for (const auto& [url, e] : names)
      if (e.old_name != e.new_name) renamed.push_back(e.shown + ": name " + shown(e.old_name) + " -> " + shown(e.new_name));
    if (!renamed.empty()) {
      input("channel names", std::nullopt, std::nullopt, "");
      out.changes.back().notes = std::move(renamed);
    }
  }
  if (both.virtual_packages) {
    std::map<std::string, std::pair<const VirtualPackage*, const VirtualPackage*>> vps;
    for (const auto& v : o.virtual_packages) vps[v.name].first = &v;
    for (const auto& v : n.virtual_packages) vps[v.name].second = &v;
    for (const auto& [name, pair] : vps) {
      const auto [ov, nv] = pair;
      if (ov && nv && *ov == *nv) continue;
      auto side = [](const VirtualPackage* v) -> std::optional<PackageSide> {
        if (v == nullptr) return std::nullopt;
        PackageSide s;
        s.version = v->version;
        s.build = v->build == "0" ? "" : v->build;
        return s;
      };
      std::string note;
      if (!ov) note = "added: the solve assumed the host has it";
      else if (!nv) note = "removed: the solve no longer assumed it";
      else if (const int cmp = compare_versions(ov->version, nv->version); cmp != 0)
        note = cmp > 0 ? "lowered: the solve assumed less of the host" : "raised: the solve assumed more of the host";
      else note = "build " + ov->build + " -> " + nv->build;
      input("virtual package " + name, side(ov), side(nv), std::move(note));
    }
  }
  if (both.pypi_indexes && o.pypi_indexes != n.pypi_indexes)
    input("pypi indexes", std::nullopt, std::nullopt, "indexes " + listed(o.pypi_indexes) + " -> " + listed(n.pypi_indexes));
}

void finish_change(PackageChange& c, std::set<ChangeKind> kinds) {
  c.kind = *kinds.begin();
  kinds.erase(kinds.begin());
  c.flags.assign(kinds.begin(), kinds.end());
}

// The base lockfile two sides were locked on (envlock.lock's `base-lockfile`, issue 18), when
// both record one and it differs: one inputs-changed change, `base lockfile`, naming each side's
// file, environment and sha256 (the base's pins are compared as records; a base whose bytes
// changed while no pin did is a change of the lock's input all the same).
void diff_base_lockfile(PlatformDiff& out, const std::optional<LockedBase>& o, const std::optional<LockedBase>& n) {
  if (!o || !n || *o == *n) return;
  const std::size_t digits = hash_digits(o->sha256, n->sha256);
  auto named = [digits](const LockedBase& b) {
    return redact_url(b.lockfile) + " (environment " + b.environment + ", sha256 " + cut_hash(b.sha256, digits) + ")";
  };
  PackageChange c;
  c.name = "base lockfile";
  c.input = true;
  c.kind = ChangeKind::InputsChanged;
  c.notes.push_back("base " + named(*o) + " -> " + named(*n));
  out.changes.push_back(std::move(c));
}

void diff_platform(PlatformDiff& out, const LockedPlatform* old_p, const LockedPlatform* new_p,
                   const std::vector<std::string>& old_requested,
                   const std::vector<std::string>& new_requested, const RecordedFields& both,
                   const std::optional<LockedBase>& old_base, const std::optional<LockedBase>& new_base) {
  static const std::vector<LockedPackage> kNoPackages;
  static const std::vector<PipPackage> kNoPip;
  const auto& old_pkgs = old_p ? old_p->packages : kNoPackages;
  const auto& new_pkgs = new_p ? new_p->packages : kNoPackages;
  out.old_count = old_pkgs.size() + (old_p ? old_p->pip.size() : 0);
  out.new_count = new_pkgs.size() + (new_p ? new_p->pip.size() : 0);
  const std::vector<const LockedPackage*> olds = by_name(old_pkgs), news = by_name(new_pkgs);

  // Formats without depends (@EXPLICIT) say nothing about host floors: compare only when both
  // sides record depends.
  auto any_depends = [](const std::vector<LockedPackage>& v) {
    return std::any_of(v.begin(), v.end(), [](const LockedPackage& p) { return !p.depends.empty(); });
  };
  const bool old_has_depends = any_depends(old_pkgs);
  const bool new_has_depends = any_depends(new_pkgs);
  const Floors old_env_floors = environment_floors(old_p);
  const Floors new_env_floors = environment_floors(new_p);
  for (std::string_view n : kHostFloorNames) {
    if (!old_has_depends || !new_has_depends) break;
    std::string name(n);
    auto o = old_env_floors.find(name);
    auto w = new_env_floors.find(name);
    std::string os = o == old_env_floors.end() ? "" : o->second.to_string();
    std::string ns = w == new_env_floors.end() ? "" : w->second.to_string();
    bool differ = (o == old_env_floors.end()) != (w == new_env_floors.end()) ||
                  (o != old_env_floors.end() && o->second != w->second);
    if (differ) out.host_floors.push_back({name, os, ns});
  }

  // The depends graphs are built for the first change that needs one.
  std::optional<DependsGraph> new_graph, old_graph;

  // Both sides in name order, walked together.
  for (std::size_t oi = 0, ni = 0; oi < olds.size() || ni < news.size();) {
    const LockedPackage* o = oi < olds.size() ? olds[oi] : nullptr;
    const LockedPackage* n = ni < news.size() ? news[ni] : nullptr;
    if (o && n && o->name != n->name) {
      if (o->name < n->name) n = nullptr;
      else o = nullptr;
    }
    oi += o ? 1 : 0;
    ni += n ? 1 : 0;
    // The same record on both sides is no change of any kind: every kind compares a field of the
    // two records, and the host floors the new record needs are part of the old environment's.
    if (o && n && *o == *n) continue;
    const std::string& name = o ? o->name : n->name;
    PackageChange c;
    c.name = name;
    std::set<ChangeKind> kinds;
    std::set<std::string> ov, nv;
    if (o) {
      ov = build_variants(*o, both.track_features);
      if (!o->depends.empty() && (!n || !n->depends.empty())) {
        auto d = depends_variants(*o);
        ov.insert(d.begin(), d.end());
      }
      c.old_side = side_of(*o, ov);
    }
    if (n) {
      nv = build_variants(*n, both.track_features);
      if (!n->depends.empty() && (!o || !o->depends.empty())) {
        auto d = depends_variants(*n);
        nv.insert(d.begin(), d.end());
      }
      c.new_side = side_of(*n, nv);
    }
    if (o && !n) {
      kinds.insert(ChangeKind::Removed);
      if (o->size) c.size_delta = -static_cast<std::int64_t>(*o->size);
    } else if (n && !o) {
      kinds.insert(ChangeKind::Added);
      if (n->size) c.size_delta = static_cast<std::int64_t>(*n->size);
    } else {
      const int vc = o->version.compare(n->version) < 0 ? -1 : (o->version.compare(n->version) > 0 ? 1 : 0);
      if (vc < 0) kinds.insert(ChangeKind::Upgraded);
      if (vc > 0) kinds.insert(ChangeKind::Downgraded);
      const bool same_channel = normalize_channel(o->channel) == normalize_channel(n->channel);
      if (!same_channel) {
        kinds.insert(ChangeKind::ChannelChanged);
        c.notes.push_back("channel " + o->channel + " -> " + n->channel);
      }
      if (vc == 0 && o->build != n->build) {
        kinds.insert(ChangeKind::Rebuilt);
      } else if (vc == 0) {
        const std::string oe = extension_of(o->file_name), ne = extension_of(n->file_name);
        if (oe != ne && !oe.empty() && !ne.empty()) {
          kinds.insert(ChangeKind::Rebuilt);
          c.notes.push_back("repackaged " + oe + " -> " + ne);
        } else if (!o->sha256.empty() && !n->sha256.empty() && o->sha256 != n->sha256) {
          // The same URL serving another archive is a re-upload: the pin no longer names one file.
          const bool same_url = redact_url(o->url) == redact_url(n->url);
          kinds.insert(same_url ? ChangeKind::ReUploaded : ChangeKind::HashChanged);
          c.notes.push_back(std::string(same_url ? "re-uploaded: same URL, " : "") + "sha256 " +
                            hash_change(o->sha256, n->sha256));
        } else if ((o->sha256.empty() || n->sha256.empty()) && !o->md5.empty() && !n->md5.empty() &&
                   o->md5 != n->md5) {
          const bool same_url = redact_url(o->url) == redact_url(n->url);
          kinds.insert(same_url ? ChangeKind::ReUploaded : ChangeKind::HashChanged);
          c.notes.push_back(std::string(same_url ? "re-uploaded: same URL, " : "") + "md5 " + o->md5 + " -> " + n->md5);
        } else if (!o->md5.empty() && !n->md5.empty() && o->md5 != n->md5) {
          // The same sha256 with another md5: one of the pin's two hashes is wrong, and an installer
          // that checks md5 (conda-lock's @EXPLICIT render, older conda) refuses the archive.
          kinds.insert(ChangeKind::HashChanged);
          c.notes.push_back("md5 " + o->md5 + " -> " + n->md5 + " with the same sha256: one of the two hashes is wrong");
        } else if (same_channel && o->url != n->url) {
          kinds.insert(ChangeKind::HashChanged);
          c.notes.push_back("URL " + o->url + " -> " + n->url);
        }
        // A hash that goes is a pin that no longer holds: sha256 -> md5 only (md5 has practical
        // collisions), or no hash at all (installed unverified) — a red flag, not "no changes".
        if (both.sha256 && !o->sha256.empty() && n->sha256.empty()) {
          kinds.insert(ChangeKind::HashChanged);
          c.notes.push_back("sha256 " + short_hash(o->sha256) + "… removed" +
                            (n->md5.empty() ? std::string(": no hash left, installed unverified") : ", only md5 left"));
        } else if ((!o->sha256.empty() || !o->md5.empty()) && n->sha256.empty() && n->md5.empty()) {
          kinds.insert(ChangeKind::HashChanged);
          c.notes.push_back("md5 " + o->md5 + " removed: no hash left, installed unverified");
        }
        // Where the archive is fetched from, whenever the pin changed: the reviewer's first question.
        const bool url_noted = std::any_of(c.notes.begin(), c.notes.end(), [](const std::string& x) { return x.starts_with("URL "); });
        if ((kinds.count(ChangeKind::HashChanged) || kinds.count(ChangeKind::ReUploaded)) && !url_noted &&
            !o->url.empty() && !n->url.empty() && redact_url(o->url) != redact_url(n->url))
          c.notes.push_back("URL " + redact_url(o->url) + " -> " + redact_url(n->url));
      }
      if (both.python_site_packages_path && !(vc == 0 && o->build == n->build) &&
          o->python_site_packages_path != n->python_site_packages_path) {
        // CEP-17's field steers where every noarch: python file of the environment goes: a change
        // is as important as a changed archive (docs/install.md, "Safety rules"). Of the same
        // archive it is a metadata change (record_metadata_changes), noted once.
        kinds.insert(ChangeKind::HashChanged);
        c.notes.push_back("python_site_packages_path " +
                          (o->python_site_packages_path.empty() ? std::string("(none)") : o->python_site_packages_path) +
                          " -> " +
                          (n->python_site_packages_path.empty() ? std::string("(none)") : n->python_site_packages_path));
      }
      if (ov != nv) {
        kinds.insert(ChangeKind::VariantSwitch);
        c.notes.push_back("variant " + (ov.empty() ? std::string("(none)") : join(ov, "+")) + " -> " +
                          (nv.empty() ? std::string("(none)") : join(nv, "+")));
      }
      // Every other field that changes what gets installed, from the one list show prints
      // (shown_record_fields): what installs differently from the same archive (a repodata patch
      // of depends, ...) is metadata-changed; a new version or build brings its own metadata,
      // which is no news of its own. The license is compared across builds too.
      const bool same_build = vc == 0 && o->build == n->build;
      for (const auto& f : shown_record_fields()) {
        if (f.change == nullptr || (f.held != nullptr && !(both.*f.held)) || !(same_build || f.any_build)) continue;
        if (std::string note = f.change(*o, *n); !note.empty()) {
          kinds.insert(f.kind);
          c.notes.push_back(std::move(note));
        }
      }
      if (o->size && n->size) {
        c.size_delta = static_cast<std::int64_t>(*n->size) - static_cast<std::int64_t>(*o->size);
      }
    }
    if (n && old_has_depends) {
      for (const auto& [vname, floor] : record_floors(*n)) {
        auto env_old = old_env_floors.find(vname);
        if (env_old == old_env_floors.end() || floor > env_old->second) {
          kinds.insert(ChangeKind::HostFloorRaised);
          c.notes.push_back(vname + " >=" + floor.to_string() + " (environment had " +
                            (env_old == old_env_floors.end() ? std::string("none")
                                                             : ">=" + env_old->second.to_string()) +
                            ")");
        }
      }
    }
    if (kinds.empty()) continue;
    if (n) {
      if (!new_graph) new_graph.emplace(new_p, new_requested);
      c.pulled_by = new_graph->pulled_by(name);
    } else {
      if (!old_graph) old_graph.emplace(old_p, old_requested);
      c.pulled_by = old_graph->pulled_by(name);
    }
    finish_change(c, std::move(kinds));
    out.changes.push_back(std::move(c));
  }

  // pip packages, paired by PEP 503 name ("Foo_Bar" in METADATA is "foo-bar" in a lockfile); a pip
  // line that names no project (`-e .`, `--extra-index-url URL`) by its credential-free text,
  // after a space no PEP 503 name holds.
  auto pip_key = [](const PipPackage& p) { return p.name.empty() ? " " + redact_text(p.requirement) : pep503_normalize(p.name); };
  std::map<std::string, const PipPackage*> old_pip, new_pip;
  if (old_p) for (const auto& p : old_p->pip) old_pip[pip_key(p)] = &p;
  if (new_p) for (const auto& p : new_p->pip) new_pip[pip_key(p)] = &p;
  std::set<std::string> pip_names;
  for (const auto& [k, _] : old_pip) pip_names.insert(k);
  for (const auto& [k, _] : new_pip) pip_names.insert(k);
  for (const auto& name : pip_names) {
    auto oi = old_pip.find(name);
    auto ni = new_pip.find(name);
    const PipPackage* o = oi == old_pip.end() ? nullptr : oi->second;
    const PipPackage* n = ni == new_pip.end() ? nullptr : ni->second;
    PackageChange c;
    c.name = n ? n->name : o->name;
    c.pypi = true;
    if (name.starts_with(' ')) {
      c.name = name.substr(1);
      c.pip_line = true;
    }
    std::set<ChangeKind> kinds;
    if (o) c.old_side = side_of(*o);
    if (n) c.new_side = side_of(*n);
    if (o && !n) {
      kinds.insert(ChangeKind::Removed);
    } else if (n && !o) {
      kinds.insert(ChangeKind::Added);
    } else if (unresolved(*o) != unresolved(*n)) {
      // One side is a requirement (environment.yml `pip:`), the other an installed or pinned
      // version: a change only when the version does not meet the requirement.
      if (auto kind = unmet_requirement(unresolved(*o) ? *o : *n, unresolved(*o) ? *n : *o, unresolved(*o), c.notes)) {
        kinds.insert(*kind);
      }
    } else {
      int vc = compare_pip_versions(o->version, n->version);
      if (vc < 0) kinds.insert(ChangeKind::Upgraded);
      if (vc > 0) kinds.insert(ChangeKind::Downgraded);
      if (vc == 0) pip_file_change(*o, *n, both.pip_hashes, kinds, c.notes);
      // The CUDA -> CPU wheel switch, the commonest accident of a pip half: another local label
      // or index folder is a variant switch, as a conda build's cuda/cpu is.
      if (const std::string ov = pip_variant(*o), nv = pip_variant(*n); ov != nv) {
        kinds.insert(ChangeKind::VariantSwitch);
        c.notes.push_back("variant " + (ov.empty() ? std::string("(none)") : ov) + " -> " +
                          (nv.empty() ? std::string("(none)") : nv));
      }
    }
    // Every other field of two resolved entries, from the one list show prints
    // (shown_pip_fields): the source, whatever the versions; core metadata of the same version
    // (another version brings its own).
    if (o && n && !unresolved(*o) && !unresolved(*n)) {
      const bool same_version = compare_pip_versions(o->version, n->version) == 0;
      for (const auto& f : shown_pip_fields()) {
        if (f.change == nullptr || (f.held != nullptr && !(both.*f.held)) || !(same_version || f.any_version)) continue;
        if (std::string note = f.change(*o, *n); !note.empty()) {
          kinds.insert(f.kind);
          c.notes.push_back(std::move(note));
        }
      }
    }
    if (kinds.empty()) continue;
    // A pinned wheel's size (envlock.lock's `size`) counts as a conda archive's does.
    if (o && !n && o->size) c.size_delta = -static_cast<std::int64_t>(*o->size);
    if (n && !o && n->size) c.size_delta = static_cast<std::int64_t>(*n->size);
    if (o && n && o->size && n->size) c.size_delta = static_cast<std::int64_t>(*n->size) - static_cast<std::int64_t>(*o->size);
    finish_change(c, std::move(kinds));
    out.changes.push_back(std::move(c));
  }

  if (old_p && new_p) diff_inputs(out, *old_p, *new_p, both);
  if (old_p && new_p) diff_base_lockfile(out, old_base, new_base);
  std::sort(out.changes.begin(), out.changes.end(), [](const PackageChange& a, const PackageChange& b) {
    return std::make_tuple(!a.red_flag(), a.kind, a.pypi, a.name) <
           std::make_tuple(!b.red_flag(), b.kind, b.pypi, b.name);
  });
  out.size_known = out.changes.empty();
  for (const auto& c : out.changes) {
    if (c.size_delta) {
      out.size_delta += *c.size_delta;
      out.size_known = true;
    }
  }
}

}  // namespace

const std::vector<ChangeKind>& all_change_kinds() {
  static const std::vector<ChangeKind> kinds = {
      ChangeKind::ReUploaded,     ChangeKind::HashChanged,     ChangeKind::VariantSwitch,
      ChangeKind::Added,          ChangeKind::Removed,         ChangeKind::Downgraded,
      ChangeKind::Upgraded,       ChangeKind::Rebuilt,         ChangeKind::ChannelChanged,
      ChangeKind::HostFloorRaised, ChangeKind::SourceChanged,  ChangeKind::MetadataChanged,
      ChangeKind::LicenseChanged, ChangeKind::InputsChanged};
  return kinds;
}

std::string_view change_kind_name(ChangeKind kind) { return kKindNames[static_cast<int>(kind)]; }

std::optional<ChangeKind> parse_change_kind(std::string_view name) {
  for (ChangeKind k : all_change_kinds()) {
    if (change_kind_name(k) == name) return k;
  }
  return std::nullopt;
}

Result<std::set<ChangeKind>> parse_fail_on(std::string_view text, bool* host_changed) {
  std::set<ChangeKind> out;
  bool host = false;
  // Kind names are exact (`ANY`, `Downgraded` are no kind: a gate must not pass on a typo read
  // loosely); white space around an element is allowed. An empty element (`downgraded,,added`, a
  // trailing comma) is refused: it is usually an unset CI variable in the list.
  for (const auto& part : split(text, ',')) {
    std::string p = trim(part);
    if (p.empty()) {
      if (text.find_first_not_of(", \t") == std::string_view::npos) continue;  // "no change kind given" below
      Error e;
      e.kind = ErrorKind::Usage;
      e.where = "--fail-on";
      e.message = "an empty element in '" + std::string(text) + "'";
      e.hint = "list kinds separated by single commas, e.g. downgraded,hash-changed,variant-switch";
      return e;
    }
    if (p == "any") {
      out.insert(all_change_kinds().begin(), all_change_kinds().end());
      continue;
    }
    if (host_changed != nullptr && p == "host-changed") {
      host = true;
      continue;
    }
    auto k = parse_change_kind(p);
    if (!k) {
      std::string valid = "any";
      for (ChangeKind kind : all_change_kinds()) valid += ", " + std::string(change_kind_name(kind));
      if (host_changed != nullptr) valid += ", host-changed";
      Error e;
      e.kind = ErrorKind::Usage;
      e.where = "--fail-on";
      e.message = "unknown change kind '" + p + "'";
      e.hint = "valid kinds: " + valid;
      return e;
    }
    out.insert(*k);
  }
  if (host_changed != nullptr) *host_changed = host;
  if (out.empty() && !host) {
    Error e;
    e.kind = ErrorKind::Usage;
    e.where = "--fail-on";
    e.message = "no change kind given";
    e.hint = "pass `any` or a comma-separated list such as downgraded,hash-changed,variant-switch";
    return e;
  }
  return out;
}

bool is_red_flag(ChangeKind kind) {
  return kind == ChangeKind::ReUploaded || kind == ChangeKind::HashChanged ||
         kind == ChangeKind::VariantSwitch || kind == ChangeKind::Downgraded;
}

bool PackageChange::has(ChangeKind k) const {
  return kind == k || std::find(flags.begin(), flags.end(), k) != flags.end();
}

bool PackageChange::red_flag() const {
  if (is_red_flag(kind)) return true;
  return std::any_of(flags.begin(), flags.end(), is_red_flag);
}

bool LockDiff::has_any(const std::set<ChangeKind>& kinds) const {
  for (ChangeKind k : kinds) {
    if (auto it = counts_any.find(k); it != counts_any.end() && it->second > 0) return true;
  }
  return false;
}

std::size_t LockDiff::red_flags() const {
  std::size_t n = 0;
  for (const auto& g : groups) {
    for (const auto& c : g.changes) n += c.red_flag() ? 1 : 0;
  }
  return n;
}

LockDiff diff_lockfiles(const Lockfile& old_lock, const Lockfile& new_lock, const std::optional<RecordedFields>& of,
                        const std::optional<RecordedFields>& nf) {
  LockDiff diff;
  struct Pair {
    std::string label;
    const LockedEnvironment* old_env;
    const LockedEnvironment* new_env;
  };
  std::vector<Pair> pairs;
  if (old_lock.environments.size() == 1 && new_lock.environments.size() == 1) {
    const auto& [on, oe] = *old_lock.environments.begin();
    const auto& [nn, ne] = *new_lock.environments.begin();
    pairs.push_back({on == nn ? on : on + " -> " + nn, &oe, &ne});
  } else {
    std::set<std::string> names;
    for (const auto& [n, _] : old_lock.environments) names.insert(n);
    for (const auto& [n, _] : new_lock.environments) names.insert(n);
    for (const auto& n : names) {
      auto oi = old_lock.environments.find(n);
      auto ni = new_lock.environments.find(n);
      pairs.push_back({n, oi == old_lock.environments.end() ? nullptr : &oi->second,
                       ni == new_lock.environments.end() ? nullptr : &ni->second});
    }
  }
  static const std::vector<std::string> kNone;
  struct Work {
    const LockedPlatform* old_p;
    const LockedPlatform* new_p;
    const std::vector<std::string>* old_requested;
    const std::vector<std::string>* new_requested;
    const std::optional<LockedBase>* old_base;
    const std::optional<LockedBase>* new_base;
  };
  static const std::optional<LockedBase> kNoBase;
  std::vector<Work> work;
  for (const auto& pair : pairs) {
    std::set<std::string> plats;
    if (pair.old_env) for (const auto& [k, _] : pair.old_env->platforms) plats.insert(k);
    if (pair.new_env) for (const auto& [k, _] : pair.new_env->platforms) plats.insert(k);
    for (const auto& plat : plats) {
      const LockedPlatform* op = nullptr;
      const LockedPlatform* np = nullptr;
      if (pair.old_env) {
        if (auto it = pair.old_env->platforms.find(plat); it != pair.old_env->platforms.end()) op = &it->second;
      }
      if (pair.new_env) {
        if (auto it = pair.new_env->platforms.find(plat); it != pair.new_env->platforms.end()) np = &it->second;
      }
      PlatformDiff g;
      g.environment = pair.label;
      g.platform = plat;
      g.presence = op && np ? PlatformDiff::Presence::Both
                            : (op ? PlatformDiff::Presence::OnlyOld : PlatformDiff::Presence::OnlyNew);
      diff.groups.push_back(std::move(g));
      work.push_back({op, np, pair.old_env ? &pair.old_env->requested : &kNone,
                      pair.new_env ? &pair.new_env->requested : &kNone,
                      pair.old_env ? &pair.old_env->base_lockfile : &kNoBase,
                      pair.new_env ? &pair.new_env->base_lockfile : &kNoBase});
    }
  }
  // Each environment x platform is compared on its own, so the groups run in parallel (they
  // share nothing but the read-only lockfiles); the output order stays the group order.
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    for (std::size_t i = next++; i < work.size(); i = next++)
      diff_platform(diff.groups[i], work[i].old_p, work[i].new_p, *work[i].old_requested, *work[i].new_requested,
                    both_hold(of ? *of : held_fields(work[i].old_p), nf ? *nf : held_fields(work[i].new_p)),
                    *work[i].old_base, *work[i].new_base);
  };
  const std::size_t threads = std::min<std::size_t>(work.size(), std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  for (const auto& g : diff.groups) {
    diff.size_delta += g.size_delta;
    if (!g.changes.empty() && g.size_known) diff.size_known = true;
    for (const auto& c : g.changes) {
      ++diff.total;
      ++diff.counts[c.kind];
      ++diff.counts_any[c.kind];
      for (ChangeKind f : c.flags) ++diff.counts_any[f];
    }
  }
  if (diff.total == 0) diff.size_known = true;
  return diff;
}

namespace {

// The URL's path segments a record's fields come from (complete_record_from_url): its last one
// (the archive's file name, percent-decoded) and the one before (the subdir).
std::pair<std::string, std::string> url_file_and_folder(const std::string& url) {
  std::string path = url.substr(0, url.find_first_of("?#"));
  while (!path.empty() && path.back() == '/') path.pop_back();
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return {percent_decode(path), ""};
  const std::string dir = path.substr(0, slash);
  const auto slash2 = dir.rfind('/');
  return {percent_decode(path.substr(slash + 1)), slash2 == std::string::npos ? "" : dir.substr(slash2 + 1)};
}

std::vector<std::string> one_if(bool held, std::string value) {
  if (!held) return {};
  return {std::move(value)};
}

std::vector<std::string> sorted_texts(std::vector<std::string> v, bool redact) {
  if (redact)
    for (auto& x : v) x = redact_text(x);
  std::sort(v.begin(), v.end());
  return v;
}

}  // namespace

// The one list of a record's fields beyond the package line: show prints each (values), diff
// compares each (change), so a field cannot be shown and not compared, or compared and not shown.
const std::vector<ShownRecordField>& shown_record_fields() {
  using P = const LockedPackage&;
  static const auto none_shown = [](const std::string& v) { return v.empty() ? std::string("(none)") : v; };
  static const std::vector<ShownRecordField> fields = {
      // md5 and url name the archive: the archive rules of diff_platform compare them with the
      // version, build, channel and sha256 (re-uploaded, hash-changed, channel-changed).
      {"md5", [](P p) { return one_if(!p.sha256.empty() && !p.md5.empty(), p.md5); }},
      // The URL when it is not what the package line spells (channel/subdir/name-version-build.conda):
      // another folder, host or file, or a .tar.bz2 archive.
      {"url",
       [](P p) {
         const std::string url = redact_url(p.url);
         return one_if(!url.empty() && url != p.channel + "/" + p.subdir + "/" + p.name + "-" + p.version.to_string() +
                                                   "-" + p.build + ".conda",
                       url);
       }},
      // What the installer checks and names the archive by (docs/review.md, "Compared fields"); a
      // new extension alone is a repackaging (rebuilt, "repackaged"), compared with the archive.
      {"file_name", [](P p) { return one_if(!p.file_name.empty() && p.file_name != url_file_and_folder(p.url).first, p.file_name); },
       false,
       [](P o, P n) {
         auto stem = [](const std::string& f) { return f.substr(0, f.size() - extension_of(f).size()); };
         return !o.file_name.empty() && !n.file_name.empty() && stem(o.file_name) != stem(n.file_name)
                    ? "file name " + o.file_name + " -> " + n.file_name
                    : std::string();
       }},
      {"subdir", [](P p) { return one_if(!p.subdir.empty() && p.subdir != url_file_and_folder(p.url).second, p.subdir); }, false,
       [](P o, P n) {
         return !o.subdir.empty() && !n.subdir.empty() && o.subdir != n.subdir ? "subdir " + o.subdir + " -> " + n.subdir
                                                                                : std::string();
       }},
      {"build_number", [](P p) { return one_if(p.build_number != 0, std::to_string(p.build_number)); }, false,
       [](P o, P n) {
         return o.build_number != n.build_number
                    ? "build_number " + std::to_string(o.build_number) + " -> " + std::to_string(n.build_number)
                    : std::string();
       },
       ChangeKind::MetadataChanged, &RecordedFields::build_number},
      {"noarch", [](P p) { return one_if(p.noarch != NoArchKind::None, std::string(noarch_name(p.noarch))); }, false,
       [](P o, P n) {
         return o.noarch != n.noarch ? "noarch " + std::string(noarch_name(o.noarch)) + " -> " + std::string(noarch_name(n.noarch))
                                     : std::string();
       },
       ChangeKind::MetadataChanged, &RecordedFields::noarch},
      // Of another build, a changed site-packages path is also hash-changed (diff_platform).
      {"python_site_packages_path", [](P p) { return one_if(!p.python_site_packages_path.empty(), p.python_site_packages_path); },
       false,
       [](P o, P n) {
         return o.python_site_packages_path != n.python_site_packages_path
                    ? "python_site_packages_path " + none_shown(o.python_site_packages_path) + " -> " +
                          none_shown(n.python_site_packages_path)
                    : std::string();
       },
       ChangeKind::MetadataChanged, &RecordedFields::python_site_packages_path},
      {"size", [](P p) { return one_if(p.size.has_value(), p.size ? std::to_string(*p.size) : ""); }, false,
       [](P o, P n) {
         return o.size && n.size && *o.size != *n.size ? "size " + std::to_string(*o.size) + " -> " + std::to_string(*n.size)
                                                       : std::string();
       }},
      {"license", [](P p) { return one_if(!p.license.empty(), p.license); }, false,
       [](P o, P n) {
         return !o.license.empty() && !n.license.empty() && o.license != n.license ? "license " + o.license + " -> " + n.license
                                                                                   : std::string();
       },
       ChangeKind::LicenseChanged, nullptr, true},
      {"track_features", [](P p) { return sorted_texts(p.track_features, false); }, false,
       [](P o, P n) { return list_change("track_features", o.track_features, n.track_features); },
       ChangeKind::MetadataChanged, &RecordedFields::track_features},
      // The legacy `features` a record asks for: the solver weighs them (conda's feature
      // de-prioritisation, as track_features), so another set is another choice of build (attack
      // 24, A4). Held where track_features are: the formats that keep one keep the other.
      {"features", [](P p) { return sorted_texts(split_features(p.features), false); }, false,
       [](P o, P n) { return list_change("features", split_features(o.features), split_features(n.features)); },
       ChangeKind::MetadataChanged, &RecordedFields::track_features},
      {"depends", [](P p) { return sorted_texts(p.depends, true); }, false,
       [](P o, P n) { return list_change("depends", o.depends, n.depends); }, ChangeKind::MetadataChanged,
       &RecordedFields::depends},
      {"constrains", [](P p) { return sorted_texts(p.constrains, true); }, false,
       [](P o, P n) { return list_change("constrains", o.constrains, n.constrains); }, ChangeKind::MetadataChanged,
       &RecordedFields::constrains},
      // conda-lock's category decides what `conda-lock install --no-dev` installs.
      {"category", [](P p) { return one_if(!p.layer.empty() && p.layer != "main", p.layer); }, true,
       [](P o, P n) { return o.layer != n.layer ? "category " + none_shown(o.layer) + " -> " + none_shown(n.layer) : std::string(); },
       ChangeKind::MetadataChanged, &RecordedFields::categories},
  };
  return fields;
}

// The same one list for a pip entry's fields beyond its package line (name, version, URL, sha256).
const std::vector<ShownPipField>& shown_pip_fields() {
  using P = const PipPackage&;
  static const auto none_shown = [](const std::string& v) { return v.empty() ? std::string("(none)") : v; };
  static const std::vector<ShownPipField> fields = {
      // The source as diff compares it: a VCS commit (pixi's `#<commit>`), an editable tree, a
      // path; index and URL are one source (pip_source_change), so neither gets a line.
      {"source",
       [](P p) {
         const PipSourceInfo src = pip_source_info(p);
         return one_if(src.kind != PipSourceInfo::Kind::Index && src.kind != PipSourceInfo::Kind::Url, src.to_string());
       },
       pip_source_change, ChangeKind::SourceChanged, nullptr, true},
      // Part of the source (PipSourceInfo's editable kind), compared with it.
      {"editable", [](P p) { return one_if(p.editable, ""); }},
      // What an unresolved entry asks for; compared against the other side's version by the
      // requirement rules (unmet_requirement); of a resolved pin the version, URL and sha256 install.
      {"requirement", [](P p) { return one_if(!p.requirement.empty(), redact_text(p.requirement)); }},
      {"requires_python", [](P p) { return one_if(!p.requires_python.empty(), p.requires_python); },
       [](P o, P n) {
         return comparable_requirement(o.requires_python) != comparable_requirement(n.requires_python)
                    ? "requires_python " + none_shown(o.requires_python) + " -> " + none_shown(n.requires_python)
                    : std::string();
       },
       ChangeKind::MetadataChanged, &RecordedFields::requires_python},
      {"requires_dist", [](P p) { return sorted_texts(p.requires_dist, false); },
       [](P o, P n) { return list_change("requires_dist", o.requires_dist, n.requires_dist, comparable_requirement); },
       ChangeKind::MetadataChanged, &RecordedFields::requires_dist},
      // A pinned wheel's record (envlock.lock, issue 20), compared when both sides have it: its
      // size as a conda archive's; the index it came from whatever the versions (a pin that moves
      // from a team's index to another is how dependency confusion reads); what required it is
      // shown, not compared (it changes with the dependents, which are lines of their own).
      {"size", [](P p) { return one_if(p.size.has_value(), p.size ? std::to_string(*p.size) : ""); },
       [](P o, P n) {
         return o.size && n.size && *o.size != *n.size ? "size " + std::to_string(*o.size) + " -> " + std::to_string(*n.size)
                                                       : std::string();
       }},
      {"index", [](P p) { return one_if(!p.index.empty(), redact_url(p.index)); },
       [](P o, P n) {
         return !o.index.empty() && !n.index.empty() && redact_url(o.index) != redact_url(n.index)
                    ? "index " + redact_url(o.index) + " -> " + redact_url(n.index)
                    : std::string();
       },
       ChangeKind::ChannelChanged, nullptr, true},
      {"required_by", [](P p) { return p.required_by; }},
  };
  return fields;
}

// Keep beside diff_inputs(): a solve input compared there is a line here.
const std::vector<ShownPlatformField>& shown_platform_fields() {
  static const std::vector<ShownPlatformField> fields = {
      {"channel",
       [](const LockedPlatform& p) {
         std::vector<std::string> out;
         for (std::size_t i = 0; i < p.channels.size(); ++i) {
           const std::string& name = i < p.channel_names.size() ? p.channel_names[i] : std::string();
           out.push_back(redact_url(p.channels[i]) + (name.empty() ? "" : " name " + name));
         }
         return out;
       }},
      {"virtual_package",
       [](const LockedPlatform& p) {
         std::vector<std::string> out;
         for (const auto& v : p.virtual_packages) out.push_back(v.to_string());
         std::sort(out.begin(), out.end());
         return out;
       }},
      {"pypi_index",
       [](const LockedPlatform& p) {
         std::vector<std::string> out;
         for (const auto& i : p.pypi_indexes) out.push_back(redact_url(i));
         return out;
       }},
  };
  return fields;
}

}  // namespace envlock
