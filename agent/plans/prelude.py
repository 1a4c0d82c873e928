"""The host-side Lua that builds a plan's environment (run once per fresh runtime, in the worker).

It runs in the runtime's real globals, captures what it needs as upvalues, and returns the
driver. The plan only ever sees `env`: allow-listed libraries (fresh copies), wrapped pcall/xpcall/
coroutine/setmetatable/getmetatable/print, and the `tools` table of closures over one dispatcher.

Why the wrappers: a count hook error can be caught by `pcall`, `xpcall`, `coroutine.resume/wrap/
close`; once a fatal condition is set, every wrapper re-raises it, so nothing can swallow it. An
xpcall handler invoked for a hook error runs with hooks off, so the user's handler is skipped
then. New coroutines do not inherit the Lua hook function, so `coroutine.create` sets it. `__gc`
finalizers run with hooks off, so metatables with `__gc` are refused.
"""

PRELUDE = r"""
local dispatch, now, BUDGET, PERIOD, OUT_CAP, MEM_LIMIT, SOFT_DEADLINE, TOOL_NAMES, FORBIDDEN = ...

local debug_sethook, debug_getinfo = debug.sethook, debug.getinfo
local co_create, co_resume, co_close = coroutine.create, coroutine.resume, coroutine.close
local co_status, co_yield, co_running, co_isyieldable =
  coroutine.status, coroutine.yield, coroutine.running, coroutine.isyieldable
local pcall, xpcall, error, type, rawget, rawequal = pcall, xpcall, error, type, rawget, rawequal
local select, tostring, tonumber, next, pairs, ipairs, assert = select, tostring, tonumber, next, pairs, ipairs, assert
local setmetatable, getmetatable, load, collectgarbage = setmetatable, getmetatable, load, collectgarbage
local string_rep, string_sub, concat = string.rep, string.sub, table.concat

local PLAN = "=plan"
-- chunk names of sandboxed code (the plan, and skills loaded through `host.compile`)
local SANDBOXED = {[PLAN] = true}
local MEMERR = "not enough memory"
local MEM_WARN_KB = MEM_LIMIT * 0.25 / 1024
local MARKER = setmetatable({}, {__tostring = function() return "plan stopped" end, __metatable = false})
local fatal = nil
local used, ticks = 0, 0
local mem_line, err_line = nil, nil
local out, out_n, out_bytes, out_trunc = {}, 0, 0, false

-- line of the innermost plan frame above the caller
local function plan_line()
  for level = 3, 200 do
    local info = debug_getinfo(level, "Sl")
    if not info then return nil end
    if SANDBOXED[info.source] then return info.currentline end
  end
  return nil
end

local function set_fatal(code, message, name, line)
  if not fatal then fatal = {code = code, message = message, name = name, line = line} end
end

local function die(code, message, name)
  set_fatal(code, message, name, plan_line())
  error(MARKER, 0)
end

local function die_memory()
  set_fatal("plan_memory_exceeded", "memory limit exceeded (" .. MEM_LIMIT .. " bytes)", nil, mem_line or plan_line())
  error(MARKER, 0)
end

local function hook()
  if fatal then error(MARKER, 0) end
  used = used + PERIOD
  if used > BUDGET then die("plan_instruction_limit", "instruction limit exceeded (" .. BUDGET .. ")") end
  ticks = ticks + 1
  if ticks % 16 == 0 then
    -- a memory error unwinds without a handler: remember where the plan was while memory grew
    if collectgarbage("count") > MEM_WARN_KB then mem_line = plan_line() end
    if now() > SOFT_DEADLINE then die("plan_timeout", "wall-time limit exceeded") end
  end
end

local function check(ok, ...)
  if fatal then error(MARKER, 0) end
  if not ok and (...) == MEMERR then die_memory() end
  return ok, ...
end

local function safe_pcall(f, ...)
  if fatal then error(MARKER, 0) end
  return check(pcall(f, ...))
end

local function safe_xpcall(f, handler, ...)
  if fatal then error(MARKER, 0) end
  local function guarded(e)
    if fatal or rawequal(e, MARKER) then return e end
    return handler(e)
  end
  return check(xpcall(f, guarded, ...))
end

local function safe_create(f)
  if fatal then error(MARKER, 0) end
  local co = co_create(f)
  if BUDGET > 0 then debug_sethook(co, hook, "", PERIOD) end
  return co
end

local function safe_resume(co, ...)
  if fatal then error(MARKER, 0) end
  return check(co_resume(co, ...))
end

local function wrapped_result(ok, ...)
  if fatal then error(MARKER, 0) end
  if not ok then
    local e = ...
    if e == MEMERR then die_memory() end
    error(e, 0)
  end
  return ...
end

local function safe_wrap(f)
  local co = safe_create(f)
  return function(...)
    if fatal then error(MARKER, 0) end
    return wrapped_result(co_resume(co, ...))
  end
end

local function safe_close(co)
  if fatal then error(MARKER, 0) end
  return check(co_close(co))
end

local function safe_setmetatable(t, mt)
  if type(mt) == "table" and rawget(mt, "__gc") ~= nil then
    die("sandbox_violation", "forbidden: __gc metamethod (finalizers are not allowed)", "__gc")
  end
  return setmetatable(t, mt)
end

local function safe_getmetatable(v)
  if type(v) ~= "table" then
    die("sandbox_violation", "forbidden: getmetatable on a " .. type(v), "getmetatable")
  end
  return getmetatable(v)
end

local function safe_print(...)
  if fatal then error(MARKER, 0) end
  if out_trunc then return end
  local n = select("#", ...)
  local parts = {...}
  for i = 1, n do parts[i] = tostring(parts[i]) end
  local line = concat(parts, "\t", 1, n) .. "\n"
  local room = OUT_CAP - out_bytes
  if #line > room then
    line = string_sub(line, 1, room)
    out_trunc = true
  end
  out_n = out_n + 1
  out[out_n] = line
  out_bytes = out_bytes + #line
end

local function safe_rep(s, n, sep)
  local ts = type(s)
  if type(n) == "number" and n > 0 and (ts == "string" or ts == "number") then
    local piece = #tostring(s) + (type(sep) == "string" and #sep or 0)
    if piece * n > MEM_LIMIT - collectgarbage("count") * 1024 then
      die("plan_memory_exceeded", "string.rep result would exceed the memory limit (" .. MEM_LIMIT .. " bytes)")
    end
  end
  return string_rep(s, n, sep)
end

local function copy(src)
  local t = {}
  for k, v in next, src do t[k] = v end
  return t
end

local function lock(t, name, forbidden)
  return setmetatable(t, {
    __index = function(_, k)
      if forbidden and forbidden[k] then die("sandbox_violation", "forbidden: " .. name .. "." .. k, name .. "." .. k) end
      return nil
    end,
    __metatable = false,
  })
end

local safe_string = copy(string)
safe_string.dump = nil
safe_string.rep = safe_rep
lock(safe_string, "string", {dump = true})
-- the string metatable is shared by every string: point it at the safe copy and protect it
local string_mt = getmetatable("")
string_mt.__index = safe_string
string_mt.__metatable = false

local tools = {}
local tool_list = {}
for i = 1, #TOOL_NAMES do
  local name = TOOL_NAMES[i]
  tool_list[i] = name
  tools[name] = function(first, ...)
    if fatal then error(MARKER, 0) end
    local status, a, b
    if rawequal(first, tools) then        -- tools:read(...) works like tools.read(...)
      status, a, b = dispatch(name, ...)
    else
      status, a, b = dispatch(name, first, ...)
    end
    if status == "fatal" then die(a, b) end
    return a
  end
end
local tool_names_text = concat(tool_list, ", ")
setmetatable(tools, {
  __index = function(_, k)
    error("unknown tool: tools." .. tostring(k) .. " (tools: " .. tool_names_text .. ")", 2)
  end,
  __metatable = false,
})

-- A fresh environment: its own copies of the libraries (string via a copy too, so one skill's
-- `string.x = ...` cannot reach another's; `("").x` still uses the protected shared metatable).
local function new_env()
  local e = {
    string = lock(copy(safe_string), "string", {dump = true}),
    table = lock(copy(table), "table"),
    math = lock(copy(math), "math"),
    utf8 = lock(copy(utf8), "utf8"),
    coroutine = lock({
      create = safe_create, resume = safe_resume, wrap = safe_wrap, close = safe_close,
      status = co_status, yield = co_yield, running = co_running, isyieldable = co_isyieldable,
    }, "coroutine"),
    pairs = pairs, ipairs = ipairs, next = next, select = select, type = type,
    tostring = tostring, tonumber = tonumber, error = error, assert = assert,
    pcall = safe_pcall, xpcall = safe_xpcall,
    setmetatable = safe_setmetatable, getmetatable = safe_getmetatable,
    print = safe_print, _VERSION = _VERSION,
  }
  e._G = e
  return setmetatable(e, {
    __index = function(_, k)
      if FORBIDDEN[k] then die("sandbox_violation", "forbidden: " .. k, k) end
      return nil
    end,
    __metatable = false,
  })
end

local env = new_env()
env.string = safe_string
env.tools = tools

local function driver(src, ctx)
  if BUDGET > 0 then debug_sethook(hook, "", PERIOD) end
  local fn, cerr = load(src, "=plan", "t", env)
  if not fn then return false, "syntax", cerr end
  ctx.tools = tools
  local function handler(e)
    if not fatal then err_line = plan_line() end
    return e
  end
  local function body()
    local ret = fn()
    local run = rawget(env, "run")
    if type(run) ~= "function" then
      if type(ret) ~= "function" then error("plan does not define function run(context)", 0) end
      run = ret
    end
    return run(ctx)
  end
  return xpcall(body, handler)
end

local function state()
  local f = fatal or {}
  return f.code, f.message, f.name, f.line, used, concat(out, "", 1, out_n), out_trunc, err_line, mem_line
end

-- What host-side layers (skills: agent/skills/layer.py) build on; never reachable from the plan.
local function compile(src, name, e)
  SANDBOXED["=" .. name] = true
  return load(src, "=" .. name, "t", e)
end

local function enter(f, ...)
  if BUDGET > 0 then debug_sethook(hook, "", PERIOD) end
  local function handler(e)
    if not fatal then err_line = plan_line() end
    return e
  end
  return xpcall(f, handler, ...)
end

local host = {
  new_env = new_env, plan_env = env, compile = compile, enter = enter, pcall = safe_pcall,
  now = now, die = die, print = safe_print, is_fatal = function() return fatal ~= nil end,
}

return driver, state, host
"""
