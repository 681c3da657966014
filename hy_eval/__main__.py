import sys

from hy_eval.cli import main

sys.exit(main())
