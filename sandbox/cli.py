"""Command-line interface: ``sandbox <command>``."""

from __future__ import annotations

import argparse
import sys


def _cmd_info(args) -> int:
    from ._info import info

    info()
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sandbox", description="CPU training sandbox: resampling kernels, autodiff, UNets."
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    p = sub.add_parser("info", help="print version, OpenMP, threads and BLAS")
    p.set_defaults(func=_cmd_info)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    return args.func(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
