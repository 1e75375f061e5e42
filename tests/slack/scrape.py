"""Reading GET /metrics the way Prometheus does, and comparing two scrapes."""

from __future__ import annotations

from dataclasses import dataclass

import aiohttp
from prometheus_client.parser import text_string_to_metric_families


@dataclass(frozen=True)
class Scrape:
    samples: dict[tuple[str, frozenset[tuple[str, str]]], float]

    def value(self, name: str, **labels: str) -> float:
        """The sum of the samples named `name` whose labels include `labels` (0 if none)."""
        wanted = set(labels.items())
        return sum(
            value
            for (sample, held), value in self.samples.items()
            if sample == name and wanted <= held
        )

    def moved(self, before: Scrape, name: str, **labels: str) -> float:
        return self.value(name, **labels) - before.value(name, **labels)


def parse(text: str) -> Scrape:
    samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return Scrape(samples)


async def scrape(base_url: str) -> Scrape:
    async with (
        aiohttp.ClientSession() as http,
        http.get(f"{base_url}/metrics") as response,
    ):
        assert response.status == 200
        assert response.content_type == "text/plain"
        return parse(await response.text())
