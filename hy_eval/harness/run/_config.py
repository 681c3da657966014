"""``RunConfig``: what one run is asked to do, the bottom of ``run/``: the plan, the
folder rules, the batch path and the runner all read it, and it imports none of them.
The model flags are ``ModelOptions``' fields under the same names, so ``run`` and
``memory add`` take them the same way."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from hy_eval._redact import redact_tree
from hy_eval.harness.scoring import JudgeSettings
from hy_eval.llm import ModelOptions


@dataclass
class RunConfig:
    """What to run. The model fields carry ``ModelOptions``' names (see :meth:`of`)."""

    suite: str = "multi_speaker"
    provider: str = "local"
    model: str | None = None
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)  # never written anywhere
    structured: str | None = None
    variant: str = "default"
    limit: int | None = None
    #: Run N cases spread evenly over the (filtered) suite: a fixed subset (``spread``).
    sample: int | None = None
    filter: str | None = None
    concurrency: int | None = None
    cache_mode: str = "read-write"
    cache_path: str = ".hy_eval/cache.sqlite"
    out: str | None = None
    resume: str | None = None
    guard: bool = True
    #: Reuse finished case records from the cache (read-write mode only; _reuse.py).
    reuse: bool = True
    timeout: float = 120.0
    #: The local model's threads (``ModelOptions.threads``; not in any cache key).
    threads: int | None = None
    retries: int = 4
    #: First backoff delay in seconds (doubles per retry); tests shorten it.
    retry_base_delay: float = 0.5
    max_error_rate: float = 0.1
    prices: str | None = None
    progress: bool = True
    #: Run each case this many times (distinct cache keys per repeat).
    repeats: int = 1
    temperature: float = 0.0
    #: A case passes when at least this many of its repeats pass (default: all).
    pass_k: int | None = None
    #: Run the suite perturbed by this perturbation (issue 20, ``_perturb.py``).
    perturb: str | None = None
    perturb_seed: int = 0
    #: How predicted facts are paired with gold facts: keyword, fuzzy or judge
    #: (``_matching.py``, docs/metrics.md "Matchers").
    matcher: str = "strict"
    #: The judge's model, when ``matcher`` is judge (``None``: the pipeline's).
    judge_provider: str | None = None
    judge_model: str | None = None
    judge_base_url: str | None = None
    #: The prompt variant whose ``judge.<lang>.j2`` the judge uses.
    judge_variant: str = "default"
    #: Fetch the answers through the vendor's batch endpoints first (``_batchrun.py``).
    batch: bool = False
    #: Seconds between two polls of the batches.
    batch_poll_interval: float = 30.0
    #: On Ctrl-C cancel the remote batches (default: leave them running, resumable).
    batch_cancel_on_interrupt: bool = False

    @classmethod
    def of(cls, options: ModelOptions, **settings: Any) -> RunConfig:
        """A config asking the model that ``options`` describe; ``settings`` the rest."""
        return cls(**{f.name: getattr(options, f.name) for f in fields(ModelOptions)}, **settings)

    def model_options(self) -> ModelOptions:
        """The model this run asks (after a resume has taken the saved settings)."""
        return ModelOptions(**{f.name: getattr(self, f.name) for f in fields(ModelOptions)})

    def judge_settings(self) -> JudgeSettings:
        """The judge's settings, for a ``--matcher judge`` run."""
        return JudgeSettings(
            self.judge_provider, self.judge_model, self.judge_base_url, self.judge_variant
        )

    def params(self) -> dict[str, Any]:
        d = {k: v for k, v in self.__dict__.items() if k not in ("api_key", "progress")}
        return redact_tree(d)
