"""A scripted memory model behind the loopback server: answers extraction and reconcile
requests (told apart by the schema name on the wire) from queues the test fills."""

import json

from hy_eval.llm import LLMClient, RetryPolicy, make_provider
from hy_eval.memory import MemoryClient, MemoryStore, PromptLibrary
from tests.loopback import LoopbackServer, Reply, openai_completion


def schema_name(req):
    rf = (req.body or {}).get("response_format") or {}
    return (rf.get("json_schema") or {}).get("name")


class ScriptedModel:
    def __init__(self):
        self.extract = []
        self.reconcile = []
        self.server = LoopbackServer(self._answer)

    def _answer(self, req):
        queue = self.extract if schema_name(req) == "memory_extraction" else self.reconcile
        item = queue.pop(0)
        if isinstance(item, Reply):
            return item
        text = item if isinstance(item, str) else json.dumps(item, ensure_ascii=False)
        return Reply(body=openai_completion(text))

    def __enter__(self):
        self.server.start()
        return self

    def __exit__(self, *exc):
        self.server.stop()

    def client(self, store=None, *, guard=True, variant="default", cache=None, mode="off"):
        provider = make_provider("openai", "scripted", base_url=self.server.openai_url, api_key="k")
        llm = LLMClient(
            provider,
            cache=cache,
            cache_mode=mode,
            retry=RetryPolicy(max_retries=1, base_delay=0.01),
        )
        return MemoryClient(llm, store or MemoryStore(), PromptLibrary(variant), guard=guard)


def seed(store, user_id, *texts, owner="user"):
    with store.transaction():
        return [store.insert(user_id, t, owner) for t in texts]
