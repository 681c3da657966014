"""``MemoryClient.add_normalised``: the same add for messages normalised beforehand."""

import asyncio

from hy_eval.conversation import normalise_messages
from hy_eval.memory import MemoryStore

from .scripted import ScriptedModel

MESSAGES = [
    {"role": "user", "name": "Tim", "content": "I work at Stripe."},
    {"role": "assistant", "name": "John", "content": "I am a nurse in Berlin."},
]
EXTRACTION = {
    "facts": [{"text": "The user works at Stripe.", "owner": "user"}],
    "basic_info": {"employer": "Stripe"},
}
RECONCILE = {"operations": [{"op": "ADD", "fact": 0}]}


def test_add_normalised_asks_and_stores_what_add_does():
    results, requests = [], []
    with ScriptedModel() as model:
        for normalised in (False, True):
            model.extract.append(EXTRACTION)
            model.reconcile.append(RECONCILE)
            store = MemoryStore()
            client = model.client(store)
            if normalised:
                go = client.add_normalised(normalise_messages(MESSAGES), "tim", "s1")
            else:
                go = client.add(MESSAGES, "tim", "s1")
            result = asyncio.run(go)
            results.append((result.rendered, result.facts, store.snapshot("tim")["profile"]))
            requests.append([r.body["messages"] for r in model.server.requests])
            model.server.requests.clear()
    assert results[0] == results[1]
    assert requests[0] == requests[1]
    assert results[0][2]["employer"] == "Stripe"
