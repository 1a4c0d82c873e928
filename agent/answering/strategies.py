"""The repairs and fallbacks the agent may apply to a model's answer: one registry, each by name.

Every strategy that changes what the model is asked, or what the agent takes from a reply, is
listed here with what it does. When one fires it is audited (`repair_applied`, with its name), and
each can be switched off by name (`--disable-repair NAME`, repeatable, or `disable_repairs` in the
config), so its worth can be measured: run the benchmark with it off and compare
(`python3 bench/bench_lorch.py --agent-arg=--disable-repair=NAME`). `luallm-agent repairs --json`
lists them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent.command_context import CommandContext

__all__ = ["Strategy", "STRATEGIES", "enabled", "applied", "unknown_names"]


@dataclass(frozen=True)
class Strategy:
    name: str
    where: str      # the module that applies it
    does: str       # what it changes, in a sentence


STRATEGIES: dict[str, Strategy] = {s.name: s for s in (
    Strategy("wider_temperature", "agent/answering/loop.py",
             "after the same rejected answer or the same error twice, the next request samples at a higher "
             "temperature"),
    Strategy("salvage", "agent/answering/loop.py",
             "after the repair budget, the last schema-valid answer is taken without the parts that failed the "
             "role's rules"),
    Strategy("stop_looping_reply", "agent/answering/loop.py",
             "a streamed reply that falls into an exact loop (six copies of a block) is stopped there: the "
             "copies to come would cost minutes to the token limit"),
    Strategy("restart_after_loop", "agent/answering/loop.py",
             "an answer that repeated itself until it was cut off is not shown back: the question is asked "
             "afresh with a note that the answer looped (shown its loop, a model copies it)"),
    Strategy("ask_definition_alone", "agent/roles/builder_rounds.py",
             "a builder reply that changed nothing is shown the function the task names and asked for it alone "
             "(merged into its file)"),
    Strategy("place_block_by_definitions", "agent/roles/builder_rounds.py",
             "a fenced block that names no path goes to the one project file whose definitions (or a class's "
             "methods) it shares most, to be merged there"),
    Strategy("merge_partial_file", "agent/roles/builder_rounds.py",
             "a file given whole that holds only part of the file on disk (definitions missing, or much "
             "shorter) is merged into it, where the Python merge can place its parts, rather than written as given"),
    Strategy("keep_cut_reply", "agent/roles/builder_rounds.py",
             "a builder reply still being written when the round's time runs out (the command's deadline less "
             "the time its tests take) is cut there, and the files it gave whole are used"),
    Strategy("stop_at_test_file", "agent/roles/builder_rounds.py",
             "a builder reply that begins a project test file, first or after a closed block, is ended there "
             "(the file would be refused), so the model stops writing it back"),
    Strategy("begin_with_file", "agent/roles/builder_rounds.py",
             "after a builder reply that gave no file of code (it began with a project test, or had no file in "
             "the form asked for), and for a fresh attempt, the next reply is begun for the model with the path "
             "and opening fence of the first file to change or create, on a server that continues a trailing "
             "assistant message (llama.cpp)"),
    Strategy("reason_before_fixing", "agent/roles/builder_rounds.py",
             "a builder round whose prompt shows the tests failing (not a fresh attempt, and not once a reply so "
             "asked gave no file) asks for the cause in one or two sentences before the files, and begins the "
             "reply with \"The tests fail because\" where the server continues an assistant turn"),
    Strategy("fresh_attempt", "agent/roles/builder_rounds.py",
             "after a builder round that moved no test forward, the next starts again from the files as they "
             "were before the command, at the varied temperature: an independent attempt (the best state so far "
             "is kept unless it does better)"),
    Strategy("feedback_in_conversation", "agent/roles/builder_rounds.py",
             "a round after one whose prompt showed the files as they now are continues that exchange: its "
             "prompt, the reply as the model's own turn (one with code in it), then what the tests said"),
    Strategy("write_goal_tests", "agent/roles/test_first.py",
             "an implement whose project tests pass on the code as it is (so none checks the task) first asks for "
             "a test of the task's examples and rules alone, before the code; one still failing at the end is "
             "taken out"),
    Strategy("quote_failing_tests", "agent/roles/builder_rounds.py",
             "a round after failing tests shows, under their output, the code of the test functions its "
             "tracebacks run through, up to the failing line (unittest prints only that line)"),
    Strategy("stop_when_nothing_to_change", "agent/roles/builder_rounds.py",
             "an implement_changes whose replies gave every file back as it was twice running, with the tests "
             "passing, ends its rounds and leaves the code as it is"),
    Strategy("withdraw_worse_change", "agent/roles/builder_rounds.py",
             "when the best round still fails the tests and the code as it was does better, the change is "
             "withdrawn"),
    Strategy("take_out_own_tests", "agent/roles/test_ledger.py",
             "when the tests still fail at the end, test files this command added are taken out if the "
             "project's own tests then pass (the model's test can be what is wrong)"),
    Strategy("keep_passing_code", "agent/roles/builder.py",
             "an implement_changes that got no usable change from the model, with the project's tests passing, "
             "answers success with the code as it is (the next review decides again) instead of failing"),
    Strategy("mend_spec_answer", "agent/roles/spec_maintainer.py",
             "a spec answer's contradictions are resolved by the agent: one section edit outside its list is "
             "listed, 'updated' with no edits is no_changes_needed, changes_requested with none named takes "
             "its summary as the change"),
    Strategy("goal_examples", "agent/roles/goal_examples.py",
             "calls with their results that the goal's prose gives (`f(2) returns 4`) are run on the code as it "
             "is, and the builder's, reviewer's and spec maintainer's prompts show what they return now"),
    Strategy("spec_changelog_by_agent", "agent/roles/spec_maintainer.py",
             "when the model gives no usable spec answer, the agent records a Changelog entry itself"),
    Strategy("approval_stands_on_same_code", "agent/roles/reviewer.py",
             "a review whose loop last approved the builder's files as they still are answers approved "
             "without asking the model again"),
    Strategy("spec_request_not_repeated", "agent/roles/spec_maintainer.py",
             "an update_spec whose loop last asked for changes the builder's round since did not make (its "
             "files as they were) records the request under Open Questions and answers spec.updated, without "
             "asking the model again"),
)}


def unknown_names(names: list[str] | tuple[str, ...] | frozenset[str]) -> list[str]:
    """The names that are no strategy (for a clear usage error)."""
    return sorted(n for n in names if n not in STRATEGIES)


def enabled(ctx: CommandContext, name: str) -> bool:
    assert name in STRATEGIES, name
    return name not in ctx.settings.disabled_repairs


def applied(ctx: CommandContext, name: str, **fields: Any) -> None:
    """Audit that `name` changed the course of this command."""
    assert name in STRATEGIES, name
    ctx.audit.record("repair_applied", task_id=ctx.cmd.task_id, name=name, **fields)
