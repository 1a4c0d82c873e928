"""The text forms the builder's rounds ask for files in, each with its reader: one object per form.

Both carry code with no escaping: a fenced block under the file's path (`fenced_files.py`, the
default) and a Lua long string, `tools.write("path", [==[ … ]==])` (`lua_files.py`, `--answers
lua`). The rounds (`agent/roles/builder_rounds.py`) speak only to a `FileForm`, so the two are
measured on the same tasks by the same loop.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from agent.answering.fenced_files import (
    FORMAT_RULES,
    FencedFile,
    begun_rest,
    closed_fenced,
    files_in_reply,
    open_file,
    path_lines,
    prose_of,
)
from agent.answering.lua_files import (
    LUA_EXAMPLE,
    LUA_RULES,
    closed_lua,
    lua_files_in_reply,
    lua_prose,
    open_lua_file,
    write_opening,
)
from agent.fences import blocks

__all__ = ["FileForm", "FENCED", "LUA", "file_form", "REASON_START"]

SAY_NOTHING_ELSE = " Say nothing else."  # how each form's rules end
REASON_START = "The tests fail because"  # begins a reply that is to give the cause first, where the server takes it


@dataclass(frozen=True)
class FileForm:
    name: str           # as the builder's payload reports it (`answer_form`)
    rules: str          # how to answer, for the system message and each prompt's end
    alone_rules: str    # how to answer with one function alone (merged into its file)
    no_form: str        # why a reply with no file in this form gave nothing
    read: Callable[[str, set[str], dict[str, str] | None], list[FencedFile]]
    open_file: Callable[[str, set[str]], str | None]   # the file a cut reply left open ("" unnamed)
    close: Callable[[str], str]          # a reply cut at a stop string, with the file it left open closed
    starts: Callable[[str], tuple[str, ...]]   # how a reply begins writing `path` (stop strings)
    begin: Callable[[str], str]          # the text a reply is begun with for the model, writing `path`
    prose: Callable[[str], str]          # the reply's own words, as a one-line summary
    begun_rest: Callable[[str], str] = str   # what the model wrote after `begin`, as it goes into the file
    example: str = ""                    # a worked example, for the system message only

    @property
    def reason_rules(self) -> str:
        """How to answer a round that shows failing tests: the cause in a few words first, then the
        files. Told to say nothing else, a small model shown its own failing code most often gives it
        back unchanged; made to name the cause first, it most often writes the fix that follows from it."""
        files = self.rules.removesuffix(SAY_NOTHING_ELSE)
        return ("First say in one or two sentences what in your code makes these tests fail and how to change it. "
                "Then " + files[0].lower() + files[1:])

    def holds_code(self, reply: str) -> bool:
        """Whether a file of the reply has two lines or more: one line is no file (most often a
        path the model put where the code goes)."""
        def long(text: str) -> bool:
            return sum(1 for line in text.splitlines() if line.strip()) >= 2
        # the blocks first: for fenced text the files read are among them
        return any(long(b.body) for b in blocks(reply, open_last=True)) \
            or any(long(f.content) for f in self.read(reply, set(), None))


FENCED = FileForm(
    name="fenced", rules=FORMAT_RULES,
    alone_rules=("Answer with the function you change, alone and whole: the file's path on a line of its own, then "
                 "only that function, fixed, in a fenced code block; the agent puts it in its place in the file. "
                 "Say nothing else."),
    no_form="it had no file in the form asked for (the path on its own line, then the whole file in a fenced block)",
    read=files_in_reply, open_file=open_file, close=closed_fenced,
    starts=lambda path: tuple(f"{line}\n```" for line in path_lines(path)),
    begin=lambda path: f"{path}\n```\n", prose=prose_of, begun_rest=begun_rest)

LUA = FileForm(
    name="lua", rules=LUA_RULES,
    alone_rules=("Answer with the function you change, alone and whole: tools.write(\"path\", [==[ on a line, then "
                 "only that function, fixed, then ]==]); the agent puts it in its place in the file. Say nothing else."),
    no_form=("it had no file in the form asked for (tools.write(\"path\", [==[ on a line, then the whole file, then "
             "]==]) on a line of its own)"),
    read=lua_files_in_reply, open_file=open_lua_file, close=closed_lua,
    starts=lambda path: (f'tools.write("{path}"',),
    begin=write_opening, prose=lua_prose, example=LUA_EXAMPLE)


def file_form(name: str) -> FileForm:
    """The form by its name ("lua", else fenced): see `answer_form.builder_text_form`."""
    return LUA if name == "lua" else FENCED
