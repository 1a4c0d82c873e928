"""Files as Lua long strings: read back exactly, cut writes found."""

from __future__ import annotations

from agent.answering.lua_files import closed_lua, lua_files_in_reply, lua_prose, open_lua_file

CODE = 'def quote(s):\n    return "\\"" + s + "\\n" + \'x\' + str([[1]][0])\n'


def test_a_long_string_carries_code_byte_for_byte() -> None:
    reply = f'Here it is.\n\n```lua\ntools.write("pkg/quote.py", [==[\n{CODE}]==])\n```\n'
    [f] = lua_files_in_reply(reply, {"pkg/quote.py"})
    assert (f.path, f.content, f.how) == ("pkg/quote.py", CODE, "lua")  # quotes, backslashes, ]] untouched
    assert lua_prose(reply) == "Here it is."


def test_several_writes_any_level_the_last_of_a_path_wins() -> None:
    reply = ('tools.write("a.py", [[\nx = 1\n]])\n'
             'tools.write("./b.py", [=[\ny = [[2]]\n]=])\n'
             'tools.write("a.py", [==[\nx = 3\n]==])\n')
    files = lua_files_in_reply(reply, set())
    assert [(f.path, f.content) for f in files] == [("b.py", "y = [[2]]\n"), ("a.py", "x = 3\n")]


def test_a_write_cut_off_is_open_and_gives_no_file() -> None:
    reply = 'tools.write("a.py", [==[\nx = 1\n]==])\ntools.write("b.py", [==[\ny = 2\n'
    assert [f.path for f in lua_files_in_reply(reply, set())] == ["a.py"]
    assert open_lua_file(reply, set()) == "b.py"
    closed = closed_lua(reply)
    assert open_lua_file(closed, set()) is None and [f.path for f in lua_files_in_reply(closed, set())] == ["a.py", "b.py"]
    assert open_lua_file(reply[:reply.index("tools.write(\"b")], set()) is None
