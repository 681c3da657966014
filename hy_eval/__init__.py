"""hy_eval: prompt-evaluation harness for a multi-speaker long-term memory pipeline."""

__version__ = "0.1.0"
__all__ = ["__version__"]
