"""argparse, the way people need it: one-line errors, defaults shown, a description and an example.

Every subcommand is added with `add_command`, so its `--help` starts with a paragraph saying what
it does and ends with examples, and each option shows its default when it has one.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import Any, NoReturn

__all__ = ["Parser", "HelpFormatter", "add_command", "int_in", "float_in", "EXIT_USAGE"]

EXIT_USAGE = 2


class Parser(argparse.ArgumentParser):
    """An invalid invocation is one line on stderr and exit code 2, not the whole usage."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: {message} (see {self.prog} --help)\n")


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the description's paragraphs and examples as written; appends each real default."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if ("%(default)" in text or not action.option_strings or default is None or default is False
                or default == "" or default is argparse.SUPPRESS):
            return text
        return f"{text} (default: %(default)s)"


def add_command(sub: Any, name: str, *, summary: str, description: str, examples: list[str]) -> Parser:
    """A subcommand whose --help has `description` (one paragraph) and `examples` (shell lines)."""
    epilog = "examples:\n" + "\n".join(f"  {line}" for line in examples)
    parser: Parser = sub.add_parser(name, help=summary, description=description, epilog=epilog,
                                    formatter_class=HelpFormatter)
    return parser


def _number(text: str, kind: Callable[[str], Any], name: str) -> Any:
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {name}, got {text!r}") from None
    if isinstance(value, float) and not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def int_in(low: int, high: int) -> Callable[[str], int]:
    """An argparse type: an integer in [low, high]."""
    def parse(text: str) -> int:
        value: int = _number(text, int, "an integer")
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be between {low} and {high}, got {value}")
        return value
    parse.__name__ = "integer"
    return parse


def float_in(low_exclusive: float, high: float) -> Callable[[str], float]:
    """An argparse type: a number in (low_exclusive, high]."""
    def parse(text: str) -> float:
        value: float = _number(text, float, "a number")
        if not low_exclusive < value <= high:
            raise argparse.ArgumentTypeError(f"must be > {low_exclusive:g} and <= {high:g}, got {text}")
        return value
    parse.__name__ = "number"
    return parse
