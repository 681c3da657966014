"""What a model's tokens cost: the default price table and ``--prices FILE.toml``."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from hy_eval._toml import read_toml
from hy_eval.llm.core._base import ConfigError, Usage

#: USD per million tokens (input, output), from the vendors' published price lists.
#: Extend or override with a TOML file: ``[models."name"] input_per_mtok = 0.15 ...``.
DEFAULT_PRICES: dict[str, tuple[float, float]] = {
    "SmolLM2-135M-Instruct": (0.0, 0.0),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4o": (2.50, 10.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1": (2.00, 8.00),
    "claude-3-5-haiku-latest": (0.80, 4.00),
    "claude-sonnet-4-0": (3.00, 15.00),
}


class PriceTable:
    def __init__(self, prices: Mapping[str, tuple[float, float]] | None = None) -> None:
        self.prices = dict(DEFAULT_PRICES if prices is None else prices)

    @staticmethod
    def load(path: str | Path | None) -> PriceTable:
        table = PriceTable()
        if path is None:
            return table
        data = read_toml(path, "price file", ConfigError)
        for model, entry in (data.get("models") or {}).items():
            try:
                table.prices[model] = (
                    float(entry["input_per_mtok"]),
                    float(entry["output_per_mtok"]),
                )
            except (KeyError, TypeError, ValueError):
                raise ConfigError(
                    f"{path}: models.{model} needs numeric input_per_mtok and output_per_mtok"
                ) from None
        return table

    def scaled(self, factor: float) -> PriceTable:
        """The same table with every price times ``factor`` (batch prices: 0.5)."""
        return PriceTable({m: (i * factor, o * factor) for m, (i, o) in self.prices.items()})

    def cost(self, model: str, usage: Usage) -> float | None:
        """USD for ``usage`` on ``model``; ``None`` (unknown) when the model has no price."""
        price = self.prices.get(model)
        if price is None:
            return None
        return (usage.input_tokens * price[0] + usage.output_tokens * price[1]) / 1_000_000
