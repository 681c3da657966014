"""Prompt templates: ``prompts/<variant>/<stage>.<lang>.j2``.

A variant folder holds only the files it changes; a missing file falls back to
``prompts/default/``. Every stage template extends ``prompts/_layout.j2`` (directly, or
through ``default/<stage>.<lang>.j2`` when a variant overrides only some blocks) and fills
two blocks, ``system`` and ``user``, which become the system and the user message. The
layout puts a marker between them; the rendered text is split at its first
occurrence, which always precedes any conversation text.

Templates run in Jinja's sandbox with ``StrictUndefined``. Conversation text is passed as
a value, never as template source, so content such as ``{{ 7*7 }}`` reaches the model
verbatim. A template that uses a variable the code does not pass is refused when loaded,
naming the file and every unknown variable.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2
from jinja2 import meta
from jinja2.sandbox import ImmutableSandboxedEnvironment

#: The pipeline's stages (a variant's prompt hashes cover these).
STAGES = ("extract", "reconcile")
#: The ``judge`` matcher's prompt: not a pipeline stage, so a pipeline run's
#: prompt hashes do not change with it; a judged run records its hashes apart.
JUDGE_STAGE = "judge"
LANGUAGES = ("en", "zh")

#: The variables the code passes to each stage; templates may use these and no others.
STAGE_VARIABLES: dict[str, frozenset[str]] = {
    "extract": frozenset({"conversation", "history", "user_name", "named_speakers", "lang"}),
    "reconcile": frozenset({"facts", "memories", "user_name", "named_speakers", "lang"}),
    JUDGE_STAGE: frozenset({"predicted", "gold", "lang"}),
}

DEFAULT_PROMPTS_DIR = Path(__file__).resolve().parents[2] / "prompts"
USER_MARKER = "<<<hy_eval:user>>>"


class PromptError(ValueError):
    """A prompt that cannot be used: unknown variant, missing file, bad template."""


@dataclass(frozen=True)
class RenderedPrompt:
    system: str
    user: str
    template: str  # path relative to the prompts folder

    def messages(self) -> list[dict[str, str]]:
        return [{"role": "system", "content": self.system}, {"role": "user", "content": self.user}]


class PromptLibrary:
    def __init__(self, variant: str = "default", root: str | Path | None = None) -> None:
        self.root = Path(root) if root is not None else DEFAULT_PROMPTS_DIR
        self.variant = variant
        if not (self.root / "default").is_dir():
            raise PromptError(f"{self.root}: no prompts/default folder")
        if not (self.root / variant).is_dir():
            known = ", ".join(self.variants(self.root))
            raise PromptError(f"unknown prompt variant {variant!r} (known: {known})")
        self.env = ImmutableSandboxedEnvironment(
            loader=jinja2.FileSystemLoader(str(self.root)),
            undefined=jinja2.StrictUndefined,
            autoescape=False,
            keep_trailing_newline=False,
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self._templates: dict[tuple[str, str], jinja2.Template] = {}

    @staticmethod
    def variants(root: str | Path | None = None) -> list[str]:
        base = Path(root) if root is not None else DEFAULT_PROMPTS_DIR
        return sorted(p.name for p in base.iterdir() if p.is_dir() and not p.name.startswith("_"))

    def path_for(self, stage: str, lang: str) -> str:
        if stage not in STAGE_VARIABLES:
            raise PromptError(f"unknown prompt stage {stage!r}")
        if lang not in LANGUAGES:
            raise PromptError(f"unknown prompt language {lang!r}")
        name = f"{stage}.{lang}.j2"
        if (self.root / self.variant / name).is_file():
            return f"{self.variant}/{name}"
        if (self.root / "default" / name).is_file():
            return f"default/{name}"
        raise PromptError(f"missing prompt file prompts/default/{name}")

    def _check_variables(self, rel: str, stage: str) -> None:
        seen: set[str] = set()
        pending = [rel]
        while pending:
            current = pending.pop()
            if current in seen:
                continue
            seen.add(current)
            source = (self.root / current).read_text(encoding="utf-8")
            try:
                ast = self.env.parse(source, name=current, filename=str(self.root / current))
            except jinja2.TemplateSyntaxError as exc:
                raise PromptError(
                    f"prompts/{current}:{exc.lineno}: template syntax error: {exc.message}"
                ) from None
            unknown = meta.find_undeclared_variables(ast) - STAGE_VARIABLES[stage]
            if unknown:
                raise PromptError(
                    f"prompts/{current}: undefined variable(s) {', '.join(sorted(unknown))} "
                    f"(the {stage} stage passes {', '.join(sorted(STAGE_VARIABLES[stage]))})"
                )
            pending.extend(r for r in meta.find_referenced_templates(ast) if r)

    def template(self, stage: str, lang: str) -> jinja2.Template:
        key = (stage, lang)
        if key not in self._templates:
            rel = self.path_for(stage, lang)
            self._check_variables(rel, stage)
            self._templates[key] = self.env.get_template(rel)
        return self._templates[key]

    def render(self, stage: str, lang: str, variables: dict[str, Any]) -> RenderedPrompt:
        unknown = set(variables) - STAGE_VARIABLES[stage]
        if unknown:
            raise PromptError(f"{stage}: the code passed unknown variable(s) {sorted(unknown)}")
        template = self.template(stage, lang)
        rel = self.path_for(stage, lang)
        try:
            text = template.render(variables)
        except jinja2.UndefinedError as exc:
            raise PromptError(f"prompts/{rel}: {exc.message}") from None
        system, marker, user = text.partition(USER_MARKER)
        if not marker:
            raise PromptError(f"prompts/{rel}: does not extend _layout.j2 (no user marker)")
        return RenderedPrompt(system.strip(), user.strip(), rel)

    def _chain(self, stage: str, lang: str) -> list[jinja2.Template]:
        """The stage's template, then each template it extends, up to the root."""
        chain = [self.template(stage, lang)]
        seen = {self.path_for(stage, lang)}
        while True:
            name = chain[-1].name or ""
            ast = self.env.parse((self.root / name).read_text(encoding="utf-8"), name=name)
            parent = next(ast.find_all(jinja2.nodes.Extends), None)
            if parent is None or not isinstance(parent.template, jinja2.nodes.Const):
                return chain
            rel = str(parent.template.value)
            if rel in seen:  # a loop Jinja would refuse too; stop rather than spin
                return chain
            seen.add(rel)
            chain.append(self.env.get_template(rel))

    def block_text(
        self, stage: str, lang: str, block: str, variables: dict[str, Any] | None = None
    ) -> str | None:
        """The text the named ``block`` renders to in this variant's ``stage`` template
        (the variant's own block, or the one it inherits), with ``variables`` (every
        variable of the stage set empty by default); None when no template of the chain
        defines the block. Whether the rendered prompt shows the block is another
        question: a variant may replace the block that held it (``short`` keeps the
        default's ``examples`` block but its ``system`` block never calls it)."""
        chain = self._chain(stage, lang)
        if not any(block in t.blocks for t in chain):
            return None
        values: dict[str, Any] = dict.fromkeys(STAGE_VARIABLES[stage], "")
        values["lang"] = lang
        if "named_speakers" in values:
            values["named_speakers"] = []
        values.update(variables or {})
        # What Jinja's ``extends`` does while rendering: every level's blocks, the
        # child's first, so that ``super()`` and ``self.<block>()`` resolve as they do.
        context = chain[0].new_context(values)
        for parent in chain[1:]:
            for name, func in parent.blocks.items():
                context.blocks.setdefault(name, []).append(func)
        try:
            return "".join(context.blocks[block][0](context))
        except jinja2.UndefinedError as exc:
            raise PromptError(f"prompts/{self.path_for(stage, lang)}: {exc.message}") from None

    def file_hashes(self, stages: tuple[str, ...] = STAGES) -> dict[str, str]:
        """SHA-256 of every prompt file this variant uses for ``stages`` (the pipeline's
        by default; for run manifests)."""
        out: dict[str, str] = {
            "_layout.j2": hashlib.sha256((self.root / "_layout.j2").read_bytes()).hexdigest()
        }
        for stage in stages:
            for lang in LANGUAGES:
                rel = self.path_for(stage, lang)
                files = [rel]
                if rel.startswith(f"{self.variant}/") and self.variant != "default":
                    fallback = f"default/{stage}.{lang}.j2"
                    if (self.root / fallback).is_file():
                        files.append(fallback)  # extended by the variant's file
                for f in files:
                    data = (self.root / f).read_bytes()
                    out[f] = hashlib.sha256(data).hexdigest()
        return dict(sorted(out.items()))
