#!/usr/bin/env python
"""Entry point: ``python run_eval.py --suite multi_speaker`` runs an evaluation.

The same CLI as ``hy-eval`` and ``python -m hy_eval``; with no sub-command (and for
``--help``) it is the ``run`` command.
"""

import sys

from hy_eval.cli import COMMANDS, main

if __name__ == "__main__":
    argv = sys.argv[1:]
    if not argv or argv[0] not in COMMANDS:
        argv = ["run", *argv]
    sys.exit(main(argv))
