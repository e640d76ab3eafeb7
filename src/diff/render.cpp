// Rendering a LockDiff as terminal text, a pull-request comment (Markdown) and JSON, and the
// normalized one-package-per-line view of `envlock show`.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "envlock/diff.hpp"
#include "envlock/pip.hpp"
#include "envlock/text.hpp"
#include "envlock/url.hpp"

namespace envlock {

std::string format_size(std::int64_t bytes, bool sign) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  std::uint64_t mag = bytes < 0 ? static_cast<std::uint64_t>(-(bytes + 1)) + 1 : static_cast<std::uint64_t>(bytes);
  double v = static_cast<double>(mag);
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  char buf[64];
  const char* s = sign ? (bytes < 0 ? "-" : "+") : (bytes < 0 ? "-" : "");
  if (u == 0) std::snprintf(buf, sizeof buf, "%s%" PRIu64 " B", s, mag);
  else std::snprintf(buf, sizeof buf, "%s%.1f %s", s, v, units[u]);
  return buf;
}

namespace {

// Defence in depth: the readers refuse names with control characters, but versions, builds,
// channels, URLs, notes and labels come from the input too. Text output never carries a raw
// control character or an invisible one (printable(), envlock/text.hpp), and a URL's host that is
// not ASCII is shown as IDNA ASCII (`xn--…`, ascii_hosts(), envlock/url.hpp): `pypі.org` with a
// Cyrillic `і` does not pass for pypi.org.
std::string clean(const std::string& s) { return printable(ascii_hosts(s)); }

std::string kinds_summary(const LockDiff& diff) {
  std::string out;
  for (ChangeKind k : all_change_kinds()) {
    auto it = diff.counts.find(k);
    if (it == diff.counts.end() || it->second == 0) continue;
    out += (out.empty() ? "" : ", ") + std::to_string(it->second) + " " + std::string(change_kind_name(k));
  }
  return out;
}

std::string plural(std::size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

std::string side_text(const std::optional<PackageSide>& s) {
  if (!s) return "";
  return clean(s->build.empty() ? s->version : s->version + " " + s->build);
}

// "pypi:requests" for a pip package, "pip -e ." for a pip line that names no project.
std::string display_name(const PackageChange& c) {
  return clean(c.pip_line ? "pip " + c.name : c.pypi ? "pypi:" + c.name : c.name);
}

std::string kind_with_flags(const PackageChange& c) {
  std::string out(change_kind_name(c.kind));
  for (ChangeKind f : c.flags) {
    out += '+';
    out += change_kind_name(f);
  }
  return out;
}

std::string summary_line(const LockDiff& diff) {
  if (diff.empty()) return "no changes";
  std::string line = plural(diff.total, "change", "changes") + ": " + kinds_summary(diff);
  line += "; size " + (diff.size_known ? format_size(diff.size_delta, true) : std::string("unknown"));
  if (auto r = diff.red_flags(); r > 0) line += "; " + plural(r, "red flag", "red flags");
  return line;
}

const char* kind_color(const PackageChange& c) {
  if (c.red_flag()) return "\x1b[1;31m";
  switch (c.kind) {
    case ChangeKind::Added: return "\x1b[32m";
    case ChangeKind::Removed: return "\x1b[31m";
    case ChangeKind::Upgraded: return "\x1b[36m";
    default: return "\x1b[33m";
  }
}

// Where a Markdown piece goes: a GFM table cell splits at every `|` not preceded by a backslash,
// even inside a code span (GFM spec, "Tables": `\|` in a cell is a pipe, in any inline), while
// text outside a table keeps a backslash as it is inside a code span.
enum class MdPlace { Text, Cell };

// Text from the input (names, versions, URLs, channels, notes, labels) as a CommonMark code span,
// the one form in which Markdown, HTML, links, images, autolinks (`https://…`, `www.…`), entities,
// emphasis and `@mentions` are all shown as written and none acts (a hostile lockfile cannot put
// a link or an image into a PR comment): a fence of one more backtick than the longest run of
// backticks inside ("a code span begins with a backtick string and ends with a backtick string
// of equal length", CommonMark 0.31, 6.1), padded with a space when the text begins or ends with
// a backtick or begins and ends with a space (one is stripped from each end on reading). In a
// table cell each `|` is written `\|` (cmark-gfm's cell scanner takes a backslash before a pipe
// as an escaped pipe whatever precedes it, and unescapes only `\|`, so `a\|b` comes back as
// written). Control and invisible characters are shown escaped (clean). Empty text: nothing.
std::string md_code(const std::string& raw, MdPlace place) {
  const std::string s = clean(raw);
  if (s.empty()) return "";
  std::size_t longest = 0, run = 0;
  for (char c : s) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  const std::string fence(longest + 1, '`');
  const bool pad = s.front() == '`' || s.back() == '`' ||
                   (s.size() > 1 && s.front() == ' ' && s.back() == ' ' && s.find_first_not_of(' ') != std::string::npos);
  std::string out = fence + (pad ? " " : "");
  for (char c : s) {
    if (c == '|' && place == MdPlace::Cell) out += '\\';
    out += c;
  }
  return out + (pad ? " " : "") + fence;
}

// Text inside an HTML block (`<details><summary>...`), where CommonMark processes no backslash
// escape, no code span and no Markdown: entities for `<`, `>`, `&` and `"`, and after every `@`
// a zero-width space (as an entity, which an HTML block decodes), so `@name` notifies nobody.
std::string md_html(const std::string& raw) {
  std::string out;
  for (char c : clean(raw)) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      case '@': out += "@&#8203;"; break;
      default: out += c;
    }
  }
  return out;
}

// A list of input texts, each its own code span, joined by `sep` (pulled-by names, notes).
std::string md_codes(const std::vector<std::string>& items, MdPlace place, const char* sep, std::size_t max_items) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i == max_items) {
      out += ", … (" + std::to_string(items.size() - max_items) + " more)";
      break;
    }
    out += (i ? sep : "") + md_code(items[i], place);
  }
  return out;
}

nlohmann::json side_json(const std::optional<PackageSide>& s) {
  if (!s) return nullptr;
  nlohmann::json j = {{"version", s->version}, {"build", s->build}, {"channel", s->channel},
                      {"url", s->url},         {"sha256", s->sha256}, {"md5", s->md5},
                      {"license", s->license}, {"variants", s->variants}};
  j["size"] = s->size ? nlohmann::json(*s->size) : nlohmann::json(nullptr);
  if (!s->source.empty()) j["source"] = s->source;
  return j;
}

std::string md_floor(const std::string& floor) { return floor.empty() ? "none" : md_code(">=" + floor, MdPlace::Text); }

std::string group_size(const PlatformDiff& g) {
  return g.size_known ? format_size(g.size_delta, true) : "unknown";
}

std::string group_title(const PlatformDiff& g) {
  std::string t = clean(g.environment + " / " + g.platform);
  if (g.presence == PlatformDiff::Presence::OnlyOld) t += " (removed)";
  if (g.presence == PlatformDiff::Presence::OnlyNew) t += " (new)";
  return t;
}

}  // namespace

std::string render_text(const LockDiff& diff, const DiffLabels& labels, bool color) {
  std::ostringstream out;
  const char* bold = color ? "\x1b[1m" : "";
  const char* reset = color ? "\x1b[0m" : "";
  out << summary_line(diff) << "\n";
  out << "old: " << clean(labels.old_label) << " (" << labels.old_format << ")\n";
  out << "new: " << clean(labels.new_label) << " (" << labels.new_format << ")\n";
  for (const auto& g : diff.groups) {
    out << "\n" << bold << group_title(g) << reset << ": ";
    if (g.changes.empty()) {
      out << "no changes (" << plural(g.new_count, "package", "packages") << ")\n";
      continue;
    }
    out << plural(g.changes.size(), "change", "changes") << ", size " << group_size(g)
        << " (" << g.old_count << " -> " << g.new_count << " packages)\n";
    for (const auto& f : g.host_floors) {
      out << "  host floor " << clean(f.name) << ": " << (f.old_floor.empty() ? "none" : ">=" + clean(f.old_floor))
          << " -> " << (f.new_floor.empty() ? "none" : ">=" + clean(f.new_floor)) << "\n";
    }
    std::size_t width = 0;
    for (const auto& c : g.changes) width = std::max(width, display_name(c).size());
    for (const auto& c : g.changes) {
      std::string kind = kind_with_flags(c);
      out << "  " << (color ? kind_color(c) : "") << (c.red_flag() ? "! " : "  ") << kind << reset;
      out << std::string(kind.size() < 30 ? 30 - kind.size() : 1, ' ');
      std::string name = display_name(c);
      out << name;
      // A solve input without sides (channels, indexes) says what changed in its note alone.
      if (c.old_side || c.new_side) out << std::string(width - name.size() + 2, ' ');
      if (c.old_side && c.new_side) out << side_text(c.old_side) << " -> " << side_text(c.new_side);
      else if (c.new_side) out << side_text(c.new_side);
      else out << side_text(c.old_side);
      if (c.size_delta && *c.size_delta != 0) out << "  " << format_size(*c.size_delta, true);
      out << "\n";
      for (const auto& note : c.notes) out << std::string(34, ' ') << clean(note) << "\n";
      if (!c.pulled_by.empty()) {
        out << std::string(34, ' ') << "pulled by: ";
        for (std::size_t i = 0; i < c.pulled_by.size(); ++i) {
          if (i == 8) {
            out << ", … (" << c.pulled_by.size() - 8 << " more)";
            break;
          }
          out << (i ? ", " : "") << clean(c.pulled_by[i]);
        }
        out << "\n";
      }
    }
  }
  return out.str();
}

namespace {

// How much a reviewer needs to see a change, most first: the archive behind a pin swapped
// (re-uploaded, hash-changed: the pin no longer names one file, and the text report and the
// primary kind put them first too), then the other "highest severity" kinds — variant
// switches, downgrades, removed packages — then the kinds that change what runs, then the
// routine ones.
int severity(const PackageChange& c) {
  static constexpr ChangeKind kOrder[] = {
      ChangeKind::ReUploaded,      ChangeKind::HashChanged,   ChangeKind::VariantSwitch, ChangeKind::Downgraded,
      ChangeKind::Removed,         ChangeKind::HostFloorRaised, ChangeKind::InputsChanged, ChangeKind::SourceChanged,
      ChangeKind::ChannelChanged,
      ChangeKind::MetadataChanged, ChangeKind::Added,          ChangeKind::Upgraded,      ChangeKind::Rebuilt,
      ChangeKind::LicenseChanged};
  for (int i = 0; i < static_cast<int>(std::size(kOrder)); ++i)
    if (c.has(kOrder[i])) return i;
  return static_cast<int>(std::size(kOrder));
}

// The cells of a change's row: its sides, what pulls it in (five at most) and its notes, each text
// from the input in its own code span.
std::string md_pulled_by(const PackageChange& c) { return md_codes(c.pulled_by, MdPlace::Cell, ", ", 5); }
std::string md_notes(const PackageChange& c, MdPlace place) { return md_codes(c.notes, place, "; ", c.notes.size()); }

std::string md_kind_counts(const std::map<ChangeKind, std::size_t>& counts) {
  std::string out;
  for (ChangeKind k : all_change_kinds()) {
    auto it = counts.find(k);
    if (it == counts.end() || it->second == 0) continue;
    out += (out.empty() ? "" : ", ") + std::to_string(it->second) + " " + std::string(change_kind_name(k));
  }
  return out;
}

}  // namespace

std::string render_markdown(const LockDiff& diff, const DiffLabels& labels, std::size_t max_bytes) {
  std::string full = render_markdown(diff, labels);
  // No changes: nothing to fold (a budget below the "No changes" line is exceeded, as below the
  // summary table; the CLI warns).
  if (max_bytes == 0 || full.size() <= max_bytes || diff.empty()) return full;
  // Over the budget: the title, the summary line and table stay; the changes follow in one table,
  // most severe first, as many as fit; the rest are counted per kind with how to see them all.
  std::ostringstream head;
  const std::string table_start = "| environment | platform |";
  const auto table_at = full.find(table_start);
  const auto table_end = full.find("\n\n", table_at);
  head << full.substr(0, table_end == std::string::npos ? full.size() : table_end + 2);
  struct Item {
    int rank;
    std::size_t group, index;
  };
  std::vector<Item> items;
  for (std::size_t gi = 0; gi < diff.groups.size(); ++gi)
    for (std::size_t ci = 0; ci < diff.groups[gi].changes.size(); ++ci)
      items.push_back({severity(diff.groups[gi].changes[ci]), gi, ci});
  std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) { return a.rank < b.rank; });
  const std::string table_head =
      "#### Most important changes\n\n| environment / platform | package | change | old | new | size | pulled by | notes |\n"
      "|---|---|---|---|---|---:|---|---|\n";
  auto fold_note = [&](std::size_t shown, const std::map<ChangeKind, std::size_t>& left) {
    std::string note = "\n**" + std::to_string(diff.total - shown) + " more " + (diff.total - shown == 1 ? "change" : "changes") +
                       " not shown** (" + md_kind_counts(left) + ") to keep this comment within " + std::to_string(max_bytes) +
                       " bytes; `envlock diff OLD NEW` (text, or `--format json`) lists every change, and `--max-bytes` sets the budget.\n";
    return note;
  };
  std::string body;
  std::size_t shown = 0;
  std::map<ChangeKind, std::size_t> left = diff.counts;
  const std::size_t base = head.str().size() + table_head.size();
  for (const auto& it : items) {
    const PlatformDiff& g = diff.groups[it.group];
    const PackageChange& c = g.changes[it.index];
    std::ostringstream row;
    row << "| " << md_code(g.environment, MdPlace::Cell) << " / " << md_code(g.platform, MdPlace::Cell) << " | "
        << md_code(display_name(c), MdPlace::Cell) << " | " << (c.red_flag() ? ":warning: " : "") << kind_with_flags(c)
        << " | " << md_code(side_text(c.old_side), MdPlace::Cell) << " | " << md_code(side_text(c.new_side), MdPlace::Cell)
        << " | " << (c.size_delta ? format_size(*c.size_delta, true) : "") << " | " << md_pulled_by(c) << " | "
        << md_notes(c, MdPlace::Cell) << " |\n";
    std::map<ChangeKind, std::size_t> after = left;
    --after[c.kind];
    // The note's length grows by at most a digit or two; counted with the next row's numbers.
    if (base + body.size() + row.str().size() + fold_note(shown + 1, after).size() + 8 > max_bytes) break;
    body += row.str();
    ++shown;
    left = std::move(after);
  }
  std::string out = head.str();
  if (shown > 0) out += table_head + body;
  out += fold_note(shown, left);
  return out;
}

std::string render_markdown(const LockDiff& diff, const DiffLabels& labels) {
  std::ostringstream out;
  out << "### envlock diff: " << md_code(labels.old_label, MdPlace::Text) << " → " << md_code(labels.new_label, MdPlace::Text)
      << "\n\n";
  if (diff.empty()) {
    out << "**No changes** — both sides lock the same packages (" << labels.old_format << " vs "
        << labels.new_format << ").\n";
    return out.str();
  }
  out << "**" << summary_line(diff) << "**\n\n";
  // Summary table: one row per environment x platform, one column per kind that occurs.
  std::vector<ChangeKind> cols;
  for (ChangeKind k : all_change_kinds()) {
    if (diff.counts.contains(k)) cols.push_back(k);
  }
  out << "| environment | platform |";
  for (ChangeKind k : cols) out << " " << change_kind_name(k) << " |";
  out << " size |\n|---|---|";
  for (std::size_t i = 0; i < cols.size(); ++i) out << "---:|";
  out << "---:|\n";
  for (const auto& g : diff.groups) {
    std::map<ChangeKind, std::size_t> counts;
    for (const auto& c : g.changes) ++counts[c.kind];
    out << "| " << md_code(g.environment, MdPlace::Cell) << " | " << md_code(g.platform, MdPlace::Cell)
        << (g.presence == PlatformDiff::Presence::OnlyOld ? " (removed)"
            : g.presence == PlatformDiff::Presence::OnlyNew ? " (new)" : "")
        << " |";
    for (ChangeKind k : cols) out << " " << (counts[k] ? std::to_string(counts[k]) : "") << " |";
    out << " " << group_size(g) << " |\n";
  }
  out << "\n";
  // Red flags first.
  if (diff.red_flags() > 0) {
    out << "#### :warning: Red flags\n\n";
    for (const auto& g : diff.groups) {
      for (const auto& c : g.changes) {
        if (!c.red_flag()) continue;
        out << "- **" << kind_with_flags(c) << "** " << md_code(display_name(c), MdPlace::Text) << " "
            << md_code(side_text(c.old_side), MdPlace::Text) << " → " << md_code(side_text(c.new_side), MdPlace::Text)
            << " (" << md_code(g.environment, MdPlace::Text) << " / " << md_code(g.platform, MdPlace::Text) << ")";
        if (!c.notes.empty()) out << "; " << md_notes(c, MdPlace::Text);
        out << "\n";
      }
    }
    out << "\n";
  }
  for (const auto& g : diff.groups) {
    out << "<details><summary>" << md_html(group_title(g)) << ": ";
    if (g.changes.empty()) {
      out << "no changes</summary>\n\n</details>\n\n";
      continue;
    }
    out << plural(g.changes.size(), "change", "changes") << ", size " << group_size(g)
        << "</summary>\n\n";
    for (const auto& f : g.host_floors) {
      out << "Host floor " << md_code(f.name, MdPlace::Text) << ": " << md_floor(f.old_floor) << " → " << md_floor(f.new_floor) << "\n\n";
    }
    out << "| package | change | old | new | size | pulled by | notes |\n";
    out << "|---|---|---|---|---:|---|---|\n";
    for (const auto& c : g.changes) {
      out << "| " << md_code(display_name(c), MdPlace::Cell) << " | " << (c.red_flag() ? ":warning: " : "")
          << kind_with_flags(c) << " | " << md_code(side_text(c.old_side), MdPlace::Cell) << " | "
          << md_code(side_text(c.new_side), MdPlace::Cell) << " | "
          << (c.size_delta ? format_size(*c.size_delta, true) : "") << " | " << md_pulled_by(c) << " | "
          << md_notes(c, MdPlace::Cell) << " |\n";
    }
    out << "\n</details>\n\n";
  }
  return out.str();
}

nlohmann::json diff_to_json(const LockDiff& diff, const DiffLabels& labels) {
  nlohmann::json j;
  j["schema"] = "envlock-diff/1";
  j["old"] = {{"source", labels.old_label}, {"format", labels.old_format}};
  j["new"] = {{"source", labels.new_label}, {"format", labels.new_format}};
  nlohmann::json by_kind = nlohmann::json::object();
  for (ChangeKind k : all_change_kinds()) {
    auto it = diff.counts.find(k);
    by_kind[std::string(change_kind_name(k))] = it == diff.counts.end() ? 0 : it->second;
  }
  j["summary"] = {{"changes", diff.total},
                  {"identical", diff.empty()},
                  {"by_kind", std::move(by_kind)},
                  {"red_flags", diff.red_flags()},
                  {"size_delta", diff.size_known ? nlohmann::json(diff.size_delta) : nlohmann::json(nullptr)}};
  nlohmann::json groups = nlohmann::json::array();
  for (const auto& g : diff.groups) {
    nlohmann::json gj;
    gj["environment"] = g.environment;
    gj["platform"] = g.platform;
    gj["presence"] = g.presence == PlatformDiff::Presence::Both      ? "both"
                     : g.presence == PlatformDiff::Presence::OnlyOld ? "old-only"
                                                                     : "new-only";
    gj["old_packages"] = g.old_count;
    gj["new_packages"] = g.new_count;
    gj["size_delta"] = g.size_known ? nlohmann::json(g.size_delta) : nlohmann::json(nullptr);
    nlohmann::json floors = nlohmann::json::array();
    for (const auto& f : g.host_floors) {
      floors.push_back({{"name", f.name},
                        {"old", f.old_floor.empty() ? nlohmann::json(nullptr) : nlohmann::json(f.old_floor)},
                        {"new", f.new_floor.empty() ? nlohmann::json(nullptr) : nlohmann::json(f.new_floor)}});
    }
    gj["host_floors"] = std::move(floors);
    nlohmann::json changes = nlohmann::json::array();
    for (const auto& c : g.changes) {
      nlohmann::json cj;
      cj["name"] = c.name;
      cj["source"] = c.input ? "input" : c.pypi ? "pypi" : "conda";
      cj["kind"] = std::string(change_kind_name(c.kind));
      nlohmann::json flags = nlohmann::json::array();
      for (ChangeKind f : c.flags) flags.push_back(std::string(change_kind_name(f)));
      cj["flags"] = std::move(flags);
      cj["red_flag"] = c.red_flag();
      cj["old"] = side_json(c.old_side);
      cj["new"] = side_json(c.new_side);
      cj["size_delta"] = c.size_delta ? nlohmann::json(*c.size_delta) : nlohmann::json(nullptr);
      cj["pulled_by"] = c.pulled_by;
      cj["notes"] = c.notes;
      changes.push_back(std::move(cj));
    }
    gj["changes"] = std::move(changes);  // moved: a copy of every group was most of the time
    groups.push_back(std::move(gj));
  }
  j["groups"] = std::move(groups);
  return j;
}

std::string render_show(const Lockfile& lock, bool with_categories) {
  std::ostringstream out;
  for (const auto& [env_name, env] : lock.environments) {
    for (const auto& [key, plat] : env.platforms) {
      const std::string prefix = clean(env_name + "/" + key) + " ";
      // The base lockfile the environment was locked on (issue 18), which diff compares as a solve
      // input: `<env>/<platform>  base-lockfile FILE ENVIRONMENT sha256:HASH`, on each platform so
      // that `git diff` names where it applies.
      if (const auto& b = env.base_lockfile)
        out << prefix << " base-lockfile " << clean(redact_url(b->lockfile)) << " " << clean(b->environment) << " sha256:"
            << clean(b->sha256) << "\n";
      // The platform's solve inputs first (`<env>/<platform>  channel URL`), in their order.
      for (const auto& f : shown_platform_fields())
        for (const auto& v : f.values(plat)) out << prefix << " " << f.name << " " << clean(v) << "\n";
      for (const auto& p : plat.packages) {
        out << prefix << clean(p.name) << " " << clean(p.version.to_string()) << " "
            << (p.build.empty() ? "-" : clean(p.build)) << " " << (p.channel.empty() ? "-" : clean(p.channel)) << " "
            << (!p.sha256.empty() ? "sha256:" + p.sha256 : !p.md5.empty() ? "md5:" + p.md5 : "-") << "\n";
        // Every other field diff compares, one line each under the package line
        // (`<env>/<platform> <name>  <field> <value>`), so a change to one is its own line in
        // `git diff` and names its package (shown_record_fields(), envlock/diff.hpp).
        const std::string field = prefix + clean(p.name) + "  ";
        for (const auto& f : shown_record_fields()) {
          if (f.categories_only && !with_categories) continue;
          for (const auto& v : f.values(p)) out << field << f.name << " " << clean(v) << "\n";
        }
      }
      for (const auto& p : plat.pip) {
        if (p.name.empty()) {  // a pip line that names no project: its text is all there is
          out << prefix << "pip " << clean(redact_text(p.requirement)) << "\n";
          continue;
        }
        const std::string url = redact_url(p.url);
        out << prefix << "pypi:" << clean(p.name) << " " << (p.version.empty() ? "-" : clean(p.version)) << " "
            << (url.empty() ? "-" : clean(url.substr(0, url.find('#')))) << " "
            << (p.sha256.empty() ? "-" : "sha256:" + p.sha256) << "\n";
        // Every other field diff compares (shown_pip_fields(), envlock/diff.hpp); a field whose
        // value is empty (`editable`) is its name alone.
        const std::string field = prefix + "pypi:" + clean(p.name) + "  ";
        for (const auto& f : shown_pip_fields())
          for (const auto& v : f.values(p)) out << field << f.name << (v.empty() ? "" : " " + clean(v)) << "\n";
      }
    }
  }
  return out.str();
}

}  // namespace envlock
