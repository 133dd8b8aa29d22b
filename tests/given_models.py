"""A model registry for pipeline tests: the models are given, none is loaded."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


class GivenModels:
    """What `RecallPipeline` asks of a `ModelRegistry`: no spaCy model, the given scorers by
    kind (a kind not given is unavailable) and the given load warnings; nothing loads."""

    def __init__(
        self, scorers: Mapping[str, Any] | None = None, warnings: Sequence[str] = ()
    ) -> None:
        self.scorers = dict(scorers or {})
        self._warnings = list(warnings)

    @property
    def warnings(self) -> list[str]:
        return list(self._warnings)

    def get_nlp(self, *, wait: bool = True) -> None:
        return None

    def get_scorer(self, kind: str, *, wait: bool = True) -> Any:
        return self.scorers.get(kind)

    def get_bi_encoder(self, *, wait: bool = True) -> Any:
        return self.scorers.get("bi_encoder")

    def get_splade(self, *, wait: bool = True) -> Any:
        return self.scorers.get("splade")

    def start_loading(self, kinds: object) -> None:
        pass  # the models are given, nothing loads
