#!/usr/bin/env python
"""Entry point: ``python run_eval.py --suite multi_speaker`` runs an evaluation.

The same CLI as ``hy-eval`` and ``python -m hy_eval``; with no sub-command it runs ``run``.
"""

import sys

from hy_eval.cli import main

if __name__ == "__main__":
    sys.exit(main())
