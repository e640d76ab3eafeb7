"""tests/wheel/installer_oracle.py WHEEL ROOT INTERPRETER X.Y [DIRECT_URL_JSON]

The oracle of envlock's wheel installer: pypa/installer (Debian's python3-installer) installs
WHEEL into the folder ROOT laid out as a conda prefix, as pip drives installer's API:

* the scheme is CPython's `posix_prefix` sysconfig scheme with base = platbase = ROOT and the
  target's X.Y (lib/pythonX.Y/site-packages, bin, the prefix for data), headers in
  include/pythonX.Y/<distribution> as installer's CLI computes them. `python -m installer
  --prefix` is not used: Debian's default scheme (posix_local) puts files under local/ and
  dist-packages, and the CLI writes neither INSTALLER nor REQUESTED;
* scripts name INTERPRETER (the environment's python, not this one), as envlock writes them;
* RECORD is validated first where this installer can (WheelFile.validate_record, installer >= 0.7);
* INSTALLER (`envlock`), direct_url.json when given, and REQUESTED are the additional metadata,
  in pip's order; no bytecode is compiled.
Exit 0 on success; an installer exception exits 1 with its message on stderr.
"""
import sys
import sysconfig

import installer
from installer.destinations import SchemeDictionaryDestination
from installer.sources import WheelFile


def main(argv):
    wheel, root, interpreter, xy = argv[1:5]
    direct_url = argv[5] if len(argv) > 5 else None
    with WheelFile.open(wheel) as source:
        if hasattr(source, "validate_record"):
            source.validate_record()
        variables = {"base": root, "platbase": root, "installed_base": root, "installed_platbase": root,
                     "py_version_short": xy, "platlibdir": "lib", "abiflags": ""}
        paths = sysconfig.get_paths("posix_prefix", vars=variables)
        scheme = {name: paths[name] for name in ("purelib", "platlib", "scripts", "data")}
        scheme["headers"] = paths["include"] + "/" + source.distribution
        destination = SchemeDictionaryDestination(scheme, interpreter=interpreter, script_kind="posix")
        metadata = {"INSTALLER": b"envlock\n"}
        if direct_url is not None:
            metadata["direct_url.json"] = direct_url.encode("utf-8")
        metadata["REQUESTED"] = b""
        installer.install(source, destination, metadata)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except Exception as exc:  # noqa: BLE001 - the message is the answer
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        sys.exit(1)
