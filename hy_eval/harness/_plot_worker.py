"""Entry point of the plot worker process (see ``_plots.py``); a module of its own so that
``python -m`` does not run a module the package has already imported."""

from hy_eval.harness._plots import main

if __name__ == "__main__":
    main()
