#pragma once
// envlock/manifest_edit.hpp — `envlock add` and `envlock rm`: a manifest's dependency list edited
// in place, as text (docs/environments.md, "Adding and removing packages").
//
// yaml-cpp's emitter drops comments and reflows a file, so a manifest is never emitted again:
// each edit splices the text at the positions yaml-cpp's node marks give (where a list, an
// entry, a key starts) and leaves every other byte as it was: comments, key order, quoting,
// indentation, blank lines, a missing final newline. Peer: `pixi add` / `pixi remove`, which edit
// pixi.toml through toml_edit for the same reason.
//
//   * add SPEC: an entry whose package name is SPEC's (conda names compared in lower case, pip
//     names PEP 503-normalised) is replaced in place, its quoting kept (`"numpy 1.*"` stays
//     double-quoted), the rest of its line (a `# [linux64]` selector comment) kept; otherwise
//     SPEC is appended to the environment's list in the list's style: a block list gets a line
//     `- SPEC` at the indentation of its dashes after its last entry; a flow list `[a, b]` gets
//     `, SPEC` after its last entry (a list spread over lines with one entry per line gets a
//     line of its own, with the trailing comma if the list has one). A missing `dependencies:`
//     key is created in the environment's map, in that map's style.
//   * rm NAME: every entry of that name is deleted: a block entry with its whole lines (its
//     trailing comment included; comment lines around it stay), a flow entry with one comma.
//   * DependencyKind::Pypi works on the environment's `pypi-dependencies:` list and its `pip:`
//     list inside `dependencies` (conda's environment.yml spelling; both read as docs/manifest.md
//     says), found in the text whether or not the manifest names an index (the parse moves a
//     `pip:` list's PEP 508 lines to pypi_dependencies once it does). add replaces an entry of
//     that name in whichever list holds it; a new one goes to `pypi-dependencies:` when the
//     environment has that key and the spec is a named PEP 508 requirement (as `pixi add --pypi`
//     writes pypi-dependencies), else to the `pip:` list: a missing `- pip:` entry is created at
//     the end of `dependencies`; one left empty by rm is deleted. rm deletes the name from both.
//
// A new scalar is written plain when YAML reads it back unchanged there (no `: `, ` #`, leading
// indicator, and in a flow list no `,[]{}`), else double-quoted; a new entry of a list whose last
// entry is quoted is quoted the same way. After each edit the text is parsed again
// (parse_manifest) and must give the environment's list as intended and every other
// environment's as before; anything else is refused as ErrorKind::Internal, the text untouched.

#include <string>
#include <string_view>
#include <vector>

#include "envlock/manifest.hpp"
#include "envlock/result.hpp"

namespace envlock {

/// Which list of an environment an edit works on.
enum class DependencyKind {
  Conda,  ///< `dependencies:` (MatchSpecs)
  Pypi,   ///< `pypi-dependencies:` and the `- pip:` list inside `dependencies:` (pip requirement lines)
};

/// One change made to the manifest text.
struct DependencyEdit {
  enum class Action { Added, Replaced, Removed };
  Action action = Action::Added;
  std::string name;      ///< the package: conda name in lower case, or the PEP 503 project name
  std::string spec;      ///< the entry written (Added, Replaced) or deleted (Removed), unquoted
  std::string previous;  ///< Replaced: the entry it replaced
  int line = 0;          ///< 1-based line of the entry: in the new text (Added, Replaced), in the old (Removed)
  bool pypi_dependencies = false;  ///< Pypi: the entry is in `pypi-dependencies:`, not in a `pip:` list
};

/// The outcome of add_dependencies / remove_dependencies.
struct EditedManifest {
  std::string text;                  ///< the whole new manifest text
  Manifest manifest;                 ///< `text` parsed (path and directory those of the input)
  std::vector<DependencyEdit> edits; ///< one per spec or name given (rm: one per entry deleted)
};

/// The environment `add` and `rm` edit when no `-e` is given: `default` when the manifest has
/// it, else its only environment. ErrorKind::Usage naming the environments when neither exists.
Result<std::string> environment_to_edit(const Manifest& manifest, std::string_view given);

/// Adds (or replaces, see the file comment) each spec of `specs`, in order, to the environment
/// `environment` of `manifest`, whose text is `text` (the file's bytes; `manifest` is its parse,
/// which gives the source name, folder and format). Every spec is checked before anything is
/// edited: a conda spec must parse as a MatchSpec (ErrorKind::Usage with the parser's message,
/// character and hint) and name one package (not `*`); a pip spec must be a requirement that
/// names a project (`requests>=2`, `pkg @ URL`, `-e ./x#egg=x`); neither may hold a line break or
/// a control character; a package given twice is a usage error. Errors: ErrorKind::Incompatible
/// for an environment the manifest lacks (the environments it has in `detail`); for a name listed
/// more than once in the environment's list (different selectors) with the lines; ErrorKind::Internal
/// when the edited text does not read back as intended (a bug).
Result<EditedManifest> add_dependencies(const Manifest& manifest, const std::string& text,
                                        std::string_view environment, const std::vector<std::string>& specs,
                                        DependencyKind kind);

/// Deletes every entry of each name of `names` (a package name, or a spec whose name is taken) from
/// the environment's list. Errors as add_dependencies; a name the list does not hold is
/// ErrorKind::Incompatible naming the environment and the names it has.
Result<EditedManifest> remove_dependencies(const Manifest& manifest, const std::string& text,
                                           std::string_view environment, const std::vector<std::string>& names,
                                           DependencyKind kind);

/// One line of a `pip:` list as the manifest reads it (docs/manifest.md, the table of pip lines):
/// the PEP 503 name when the line names a project (else empty), `==` version, URL, and the line
/// credential-free in `requirement`.
PipPackage parse_pip_requirement(const std::string& line);

}  // namespace envlock
