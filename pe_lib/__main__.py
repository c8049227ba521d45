"""The command line: ``python -m pe_lib describe path/to/config.json [--json]``.

``describe`` prints :func:`pe_lib.models.description.describe` of a ``config.json`` (or of a folder in
the Hugging Face layout that holds one): a plain-text table, or with ``--json`` the JSON of
:meth:`pe_lib.models.description.Description.to_dict`. A config pe_lib cannot read ends the command
with status 2 and the message naming the field.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default: ``sys.argv[1:]``); returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m pe_lib", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    describe = commands.add_parser(
        "describe", help="what a model's config.json does with positions, layer by layer"
    )
    describe.add_argument("path", help="a config.json, or a folder holding one")
    describe.add_argument("--json", action="store_true", help="print JSON instead of a table")
    describe.add_argument(
        "--no-transformers",
        action="store_true",
        help="read the file's keys alone: refuse keys transformers' classes would fill in",
    )
    arguments = parser.parse_args(argv)
    from .models.description import describe as describe_config

    try:
        found = describe_config(
            arguments.path, use_transformers=False if arguments.no_transformers else None
        )
    except (TypeError, ValueError) as error:
        print(f"python -m pe_lib describe: {error}", file=sys.stderr)
        return 2
    print(json.dumps(found.to_dict(), indent=2) if arguments.json else found)
    return 0


if __name__ == "__main__":
    sys.exit(main())
