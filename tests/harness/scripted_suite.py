"""A scripted model for whole suites: for each case, answers built from its gold labels
(optionally with planted mistakes), served by the loopback server in the OpenAI format.

Extraction answers write each gold fact as its reference text (its subject followed by
its keywords when it has none); reconcile answers apply the case's ``expect.operations`` (as
``oracle.plan_operations`` plans them) to the memories the prompt shows, and ADD the
rest."""

import json
import re

from hy_eval.conversation import render_conversation
from hy_eval.memory._extract import MAX_FACT_CHARS, cut_text
from tests.harness.oracle import plan_operations
from tests.loopback import LoopbackServer, Reply, openai_completion

PREFIX = {
    "en": {"user": "The user", "assistant": "The assistant"},
    "zh": {"user": "用户", "assistant": "助手"},
}


def _memories_part(prompt):
    """The existing memories block of a reconcile prompt (either language)."""
    for start, end in (("Existing memories:", "New facts:"), ("已有记忆：", "新事实：")):
        if start in prompt:
            return prompt.split(start)[-1].split(end)[0]
    return ""


def scripted_config(server, out, **kw):
    """The ``RunConfig`` of a run against the scripted model behind ``server``, written to
    ``out``: no cache, no progress output; ``kw`` sets any other field."""
    from hy_eval.harness import RunConfig

    base = dict(
        suite="multi_speaker",
        provider="openai",
        model="scripted",
        base_url=server.openai_url,
        api_key="sk-dummy",
        cache_mode="off",
        out=str(out),
        progress=False,
    )
    base.update(kw)
    return RunConfig(**base)


def model_args(server):
    """CLI flags that point a run at a scripted model behind ``server``."""
    return ["--provider", "openai", "--model", "scripted", "--base-url", server.openai_url]


def gold_text(case, subject, keywords):
    prefix = PREFIX[case.lang].get(subject, subject)
    words = [(k if isinstance(k, str) else k[0]).removeprefix("=") for k in keywords]
    return f"{prefix} {' '.join(words)}."


def _perfect_text(case, fact):
    """The gold fact's reference wording, as a perfect model would write it (the strict
    matcher compares it); a fact without a text is written as its subject
    followed by its keywords."""
    if not fact.text:
        return gold_text(case, fact.subject, fact.keywords)
    return fact.text


def perfect_extraction(case):
    facts = [{"text": _perfect_text(case, f), "owner": f.owner} for f in case.expect.facts]
    info = {}
    if case.expect.profile and case.expect.profile.name:
        info["name"] = case.expect.profile.name
    return {"facts": facts, "basic_info": info}


class SuiteModel:
    """``extraction[case_id]`` and ``reconcile[case_id]`` hold the answers (dicts, raw
    strings or ``Reply`` objects); reconcile defaults to ADD for every new fact."""

    def __init__(self, cases, extraction=None, reconcile=None):
        self.by_text = {}
        self.cases = {c.id: c for c in cases}
        for case in cases:
            rendered = render_conversation(case.normalised)
            self.by_text[rendered] = case.id
        self.extraction = extraction or {c.id: perfect_extraction(c) for c in cases}
        self.reconcile = reconcile or {}
        self.server = LoopbackServer(self.answer)

    def case_of(self, prompt):
        # The longest rendered conversation contained in the prompt is this case's.
        found = [t for t in self.by_text if t in prompt]
        return self.by_text[max(found, key=len)]

    def answer(self, req):
        prompt = req.messages[-1]["content"]
        name = ((req.body.get("response_format") or {}).get("json_schema") or {}).get("name")
        if name == "memory_extraction":
            item = self.extraction[self.case_of(prompt)]
        else:
            facts = re.findall(
                r"^(\d+): ",
                prompt.split("New facts:" if "New facts:" in prompt else "新事实：")[-1],
                re.M,
            )
            case_id = self.case_for_reconcile(prompt)
            if case_id in self.reconcile:
                item = self.reconcile[case_id]
            else:
                item = self.expected_answer(case_id, prompt, facts)
        if isinstance(item, Reply):
            return item
        text = item if isinstance(item, str) else json.dumps(item, ensure_ascii=False)
        # Answered by the model asked, as a vendor does (a batch result naming another
        # model is refused).
        return Reply(body=openai_completion(text, model=req.body.get("model", "loopback-model")))

    def expected_answer(self, case_id, prompt, facts):
        """ADD for every fact, but the operations the case expects on shown memories."""
        ops = {int(i): ("ADD", []) for i in facts}
        case = self.cases.get(case_id)
        if case is not None:
            found = re.findall(r"^(m\d+): (.*)$", _memories_part(prompt), re.M)
            shown = {text: short for short, text in found}
            texts = {m.id: m.text for m in case.existing}
            for fact, op, mids in plan_operations(case):
                targets = [shown.get(texts[m]) for m in mids]
                if fact in ops and all(targets):
                    ops[fact] = (op, targets)
        return {
            "operations": [
                {"op": op, "fact": i, "target_ids": targets, "text": ""}
                for i, (op, targets) in ops.items()
            ]
        }

    def case_for_reconcile(self, prompt):
        # Reconcile prompts carry facts, not the conversation: match the extraction answer.
        for case_id, ext in self.extraction.items():
            if (
                isinstance(ext, dict)
                and ext["facts"]
                # a fact past the schema's limit is shown cut, as the answer is cut
                and all(cut_text(f["text"], MAX_FACT_CHARS) in prompt for f in ext["facts"])
            ):
                return case_id
        return None

    def __enter__(self):
        self.server.start()
        return self

    def __exit__(self, *exc):
        self.server.stop()
