"""The ``sandbox`` command line.

:mod:`.main` parses the commands and runs them; :mod:`.train_options` declares the
options of ``train``; :mod:`.errors` turns every failure into one line and an exit
status; :mod:`.info`, :mod:`.explain`, :mod:`.gradcheck_table` and :mod:`.viz` are
the commands' teaching and reporting tools.  The console script is
``sandbox.cli.commands:entry``.
"""

from .commands import build_parser, entry, main

__all__ = ["build_parser", "entry", "main"]
