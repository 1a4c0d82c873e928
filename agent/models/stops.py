"""Stop strings applied by the client: the reply ends before the first one, wherever it is served.

A caller that knows what the rest of a reply would be (the builder: a project test file given back,
which it refuses anyway) names where to stop; the stream is closed there, which stops the server's
generation too. Applied here rather than sent as the API's `stop`, so any server honours it and a
reply read whole (not streamed) is cut the same way. Each piece is looked at once, with a tail as
long as the longest stop string: linear in the reply.
"""

from __future__ import annotations

__all__ = ["StopStrings", "cut_at_stop"]


class StopStrings:
    def __init__(self, stops: tuple[str, ...]) -> None:
        self.stops = tuple(s for s in stops if s)
        self._keep = max((len(s) for s in self.stops), default=1) - 1
        self._tail = ""
        self._seen = 0  # characters fed so far

    def feed(self, added: str) -> int | None:
        """The position in the whole reply where it is to end, once a stop string is complete."""
        if not self.stops:
            return None
        window = self._tail + added
        start = self._seen - len(self._tail)
        self._seen += len(added)
        found = [i for i in (window.find(s) for s in self.stops) if i >= 0]
        if found:
            return start + min(found)
        self._tail = window[-self._keep:] if self._keep else ""
        return None


def cut_at_stop(text: str, stops: tuple[str, ...]) -> str:
    found = [i for i in (text.find(s) for s in stops if s) if i >= 0]
    return text[:min(found)] if found else text
