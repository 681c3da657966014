"""``RunConfig``: what one run is asked to do, the bottom of ``run/``: the plan, the
folder rules, the batch path and the runner all read it, and it imports none of them.

It is built in one place (the command line, or :meth:`RunConfig.of` from the model
options), checked in one place (:meth:`RunConfig.problem`: the run's own flags here, the
model flags by ``ModelOptions.problem``, so ``run`` and ``memory add`` word them alike),
and a resume takes the manifest's settings by validating them field by field
(:meth:`RunConfig.resumed`): a manifest is input, never trusted (rule E2)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from hy_eval._numbers import is_integer, is_number
from hy_eval._redact import redact_tree
from hy_eval.harness.scoring import MATCHERS, JudgeSettings
from hy_eval.harness.systems import SYSTEM_NAMES
from hy_eval.llm import DEFAULT_CACHE_PATH, ModelOptions

#: Settings a resume takes from the manifest, unless the command line moved them off
#: their default (a flag given with its default value cannot be told from no flag).
KEPT_ON_RESUME = (
    "cache_mode",
    "concurrency",
    "threads",
    "reuse",
    "timeout",
    "case_timeout",
    "retries",
    "retry_base_delay",
    "max_error_rate",
    "batch",
    "batch_poll_interval",
    "batch_cancel_on_interrupt",
    "batch_dir",
)
#: The key of a ``--batch-dir`` run's openai provider, which sends nothing.
FOLDER_KEY = "batch-dir-sends-nothing"
#: Identity fields a resume takes from the manifest, with the case selection. No
#: endpoint is among them: the pipeline's and the judge's provider, model and base URL
#: come from the command line and must match the manifest (``endpoint_mismatch``).
SAVED_IDENTITY = (
    "suite",
    "system",
    "matcher",
    "judge_variant",
    "structured",
    "context",
    "variant",
    "guard",
    "repeats",
    "temperature",
    "pass_k",
    "perturb",
    "perturb_seed",
    "limit",
    "sample",
    "filter",
)


class RunConfig(BaseModel):
    """What to run. The model fields carry ``ModelOptions``' names (see :meth:`of`)."""

    model_config = ConfigDict(
        use_attribute_docstrings=True, extra="forbid", strict=True, validate_assignment=True
    )

    suite: str = "multi_speaker"
    """Suite name (a folder under datasets/) or a folder path."""
    system: str = "hy_eval"
    """The memory system under test: ``hy_eval`` (this package's pipeline), ``hy_memory``
    or ``mem0`` (docs/systems.md)."""
    provider: str = "local"
    """``local`` (embedded llama.cpp), ``openai`` (and compatible servers) or ``anthropic``."""
    model: str | None = None
    """Model id, or a GGUF path for ``local``; ``None`` for the provider's default."""
    base_url: str | None = None
    """Endpoint of an OpenAI-compatible or Anthropic server."""
    api_key: str | None = Field(default=None, repr=False)
    """The key; never written anywhere (``params`` leaves it out)."""
    structured: str | None = None
    """openai only: how to ask for JSON (``json_schema``, ``tools``, ``auto``, ...)."""
    variant: str = "default"
    """The prompt variant (a folder under prompts/)."""
    limit: int | None = None
    """Run the first N cases of the (filtered) suite."""
    sample: int | None = None
    """Run N cases spread evenly over the (filtered) suite: a fixed subset (``spread``)."""
    filter: str | None = None
    """Case filter, ``key=value`` pairs (docs/datasets.md)."""
    concurrency: int | None = None
    """Calls at once; ``None`` for the provider's default."""
    cache_mode: str = "read-write"
    """``read-write``, ``replay-only``, ``off`` or ``refresh``."""
    cache_path: str | None = DEFAULT_CACHE_PATH
    """The answer cache file (``None`` only with ``cache_mode="off"``)."""
    out: str | None = None
    """The run folder of a new run (default: a new folder under reports/)."""
    resume: str | None = None
    """The run folder to resume."""
    guard: bool = True
    """The reconcile step's cross-subject guard (rule R2)."""
    reuse: bool = True
    """Reuse finished case records from the cache (read-write mode only; ``_reuse.py``)."""
    timeout: float = 120.0
    """Seconds per call (the local model is not timed out)."""
    case_timeout: float | None = None
    """Seconds an external system's worker may take for one case before the case fails
    and a new worker takes the next (``None``: :meth:`worker_case_timeout`'s default)."""
    threads: int | None = None
    """The local model's threads (``ModelOptions.threads``; not in any cache key)."""
    context: int | None = None
    """The local model's context in tokens (``ModelOptions.context``; in the cache key)."""
    retries: int = 4
    """Retries per call for errors that a retry can cure."""
    retry_base_delay: float = 0.5
    """First backoff delay in seconds (doubles per retry); tests shorten it."""
    max_error_rate: float = 0.1
    """The run fails (exit 1) when more than this share of its cases errored."""
    prices: str | None = None
    """A price table file (per million tokens) for the cost figures."""
    progress: bool = True
    """Show the progress line."""
    repeats: int = 1
    """Run each case this many times (distinct cache keys per repeat)."""
    temperature: float = 0.0
    """Sampling temperature of every request."""
    pass_k: int | None = None
    """A case passes when at least this many of its repeats pass (default: all)."""
    perturb: str | None = None
    """Run the suite perturbed by this perturbation (``datasets/_perturb.py``)."""
    perturb_seed: int = 0
    """The perturbation's seed."""
    matcher: str = "strict"
    """How predicted facts are paired with gold facts: strict, keyword, fuzzy or judge
    (``scoring/_matching.py``, docs/metrics.md "Matchers")."""
    judge_provider: str | None = None
    """The judge's provider, when ``matcher`` is judge (``None``: the pipeline's)."""
    judge_model: str | None = None
    """The judge's model (``None``: the pipeline's)."""
    judge_base_url: str | None = None
    """The judge's endpoint (``None``: the pipeline's)."""
    judge_variant: str = "default"
    """The prompt variant whose ``judge.<lang>.j2`` the judge uses."""
    batch: bool = False
    """Fetch the answers through the vendor's batch endpoints first (``run/_batch.py``)."""
    batch_poll_interval: float = 30.0
    """Seconds between two polls of the batches."""
    batch_cancel_on_interrupt: bool = False
    """On Ctrl-C cancel the remote batches (default: leave them running, resumable)."""
    batch_dir: str | None = None
    """The batch vendor is this folder: each round's requests are written to it as an
    OpenAI Batch file and their answers read back from it (``llm/batch/_folder.py``)."""

    @classmethod
    def of(cls, options: ModelOptions, **settings: Any) -> RunConfig:
        """A config asking the model that ``options`` describe; ``settings`` the rest."""
        return cls(**{f.name: getattr(options, f.name) for f in fields(ModelOptions)}, **settings)

    def worker_case_timeout(self) -> float:
        """``case_timeout``, or by default ``max(600, 10 x timeout)``: a case is several
        calls, and the local model is not timed out per call."""
        if self.case_timeout is not None:
            return self.case_timeout
        return max(600.0, 10 * self.timeout)

    def model_options(self) -> ModelOptions:
        """The model this run asks (after a resume has taken the saved settings). With
        ``--batch-dir`` no request is sent, so no key is needed: a placeholder stands in."""
        options = {f.name: getattr(self, f.name) for f in fields(ModelOptions)}
        if self.batch_dir and self.provider == "openai" and not options["api_key"]:
            options["api_key"] = FOLDER_KEY
        return ModelOptions(**options)

    def judge_settings(self) -> JudgeSettings:
        """The judge's settings, for a ``--matcher judge`` run."""
        return JudgeSettings(
            self.judge_provider, self.judge_model, self.judge_base_url, self.judge_variant
        )

    def params(self) -> dict[str, Any]:
        """The settings a manifest records: every field but the key and the progress
        switch, credentials in URLs redacted."""
        d = {k: v for k, v in self.model_dump().items() if k not in ("api_key", "progress")}
        return redact_tree(d)

    def resumed(self, saved: Mapping[str, Any]) -> RunConfig:
        """This config with a resumed run's settings (its manifest's ``params``): the
        identity and selection always, the ``KEPT_ON_RESUME`` settings where the command
        line left the default. Each value taken is validated strictly against its
        field's type (``true`` is no count, ``"5"`` no number); ``ValueError`` names the
        first that is not."""
        defaults = RunConfig()
        taken = {k: saved[k] for k in SAVED_IDENTITY if k in saved}
        taken |= {
            k: saved[k]
            for k in KEPT_ON_RESUME
            if k in saved and getattr(self, k) == getattr(defaults, k)
        }
        try:
            return RunConfig.model_validate({**self.model_dump(), **taken}, strict=True)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            got = repr(first["input"])  # a manifest is input: any length, any text
            got = got if len(got) <= 60 else got[:57] + "..."
            raise ValueError(
                f"params.{where} {first['msg'][0].lower()}{first['msg'][1:]} (got {got})"
            ) from None

    def _batch_dir_problem(self) -> str | None:
        if not self.batch:
            return "--batch-dir goes with --batch"
        if self.provider != "openai":
            return (
                "--batch-dir writes OpenAI Batch files: it needs --provider openai "
                f"(got {self.provider})"
            )
        if self.structured in (None, "auto") and self.base_url:
            return (
                "--batch-dir asks no server, so none can be probed: give --structured MODE "
                "(json_schema for vLLM and OpenAI)"
            )
        if self.structured == "auto":
            return "--batch-dir asks no server, so none can be probed: give --structured MODE"
        return None

    def problem(self) -> str | None:
        """A one-line problem with the run's numbers and choices, or ``None``: the run's
        own flags here, the model flags by ``ModelOptions.problem`` (one check a flag)."""
        for flag, value, optional in (
            ("--limit", self.limit, True),
            ("--sample", self.sample, True),
            ("--repeats", self.repeats, False),
        ):
            if not (optional and value is None) and not (is_integer(value) and value >= 1):
                return f"{flag} must be at least 1 (got {value!r})"
        if not (is_number(self.max_error_rate) and 0.0 <= self.max_error_rate <= 1.0):
            return f"--max-error-rate must be between 0 and 1 (got {self.max_error_rate!r})"
        if self.pass_k is not None and not (
            is_integer(self.pass_k) and 1 <= self.pass_k <= self.repeats
        ):
            rule = f"between 1 and --repeats ({self.repeats})"
            return f"--pass-k must be {rule} (got {self.pass_k!r})"
        if self.batch and self.cache_mode != "read-write":
            return "--batch needs --cache-mode read-write (its answers go to the cache)"
        if self.case_timeout is not None and not (
            is_number(self.case_timeout) and 0 < self.case_timeout < float("inf")
        ):
            return f"--case-timeout must be a number of seconds above 0 (got {self.case_timeout!r})"
        if self.batch_dir is not None:
            problem = self._batch_dir_problem()
            if problem:
                return problem
        if not self.batch_poll_interval > 0:
            return f"--batch-poll-interval must be above 0 (got {self.batch_poll_interval!r})"
        if self.system not in SYSTEM_NAMES:
            return f"--system must be one of {', '.join(SYSTEM_NAMES)} (got {self.system!r})"
        if self.system != "hy_eval" and self.batch and not self.batch_dir:
            return (
                f"--batch runs this package's pipeline only (got --system {self.system}); "
                "--batch-dir DIR runs an external system in rounds"
            )
        if self.matcher not in MATCHERS:
            return f"--matcher must be one of {', '.join(MATCHERS)} (got {self.matcher!r})"
        return self.model_options().problem()
