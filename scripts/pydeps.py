"""Print the Python requirements of the dev virtualenv, one per line.

Reads pyproject.toml (the single source of truth): the build backend's requirements, the
runtime dependencies and the extras named on the command line (default: dev).
Used by `make venv`.
"""

import sys
import tomllib
from pathlib import Path


def main(argv: list[str]) -> int:
    root = Path(__file__).resolve().parent.parent
    pyproject = tomllib.loads((root / "pyproject.toml").read_text())
    extras = argv or ["dev"]
    reqs = list(pyproject["build-system"]["requires"])
    reqs += pyproject["project"]["dependencies"]
    optional = pyproject["project"].get("optional-dependencies", {})
    for extra in extras:
        if extra not in optional:
            allowed = ", ".join(optional)
            print(f"pydeps: unknown extra '{extra}'; allowed: {allowed}", file=sys.stderr)
            return 2
        reqs += optional[extra]
    print("\n".join(reqs))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
