"""The host-side Lua that gives skills their environment, on top of the plan prelude's `host`.

It runs in the runtime's real globals (never reachable by skill code) and builds, per skill, a
fresh environment from `host.new_env()` plus: `io.open`/`io.lines` returning handle tables of
closures (never Python objects), a scoped `require`, `log`, and `exec` (only with declared
`commands`). Every decision — paths, dependencies, quotas, audit — is made by the one Python
dispatcher `sd(op, ...)`, which answers `ok`, `fail` (Lua's nil, message), `err`/`violation`
(raised at the skill's line) or `fatal` (the run stops, like a plan quota).

Two entry points: `run_test` (a skill's `_test.lua` with `luallm_test`) and `install_plan`
(the `skills` namespace in a plan's environment).
"""

SKILL_LAYER = r"""
local host, sd = ...
local type, error, tostring, select, pairs, ipairs, next = type, error, tostring, select, pairs, ipairs, next
local setmetatable, rawequal, rawget = setmetatable, rawequal, rawget
local concat, tpack = table.concat, table.pack
local new_env, compile, enter, spcall, now, die = host.new_env, host.compile, host.enter, host.pcall, host.now, host.die
local violations = 0

local function call(op, ...)
  local status, a, b, c = sd(op, ...)
  if status == "ok" then return a, b, c end
  if status == "fail" then return nil, a end
  if status == "fatal" then die(a, b) end
  if status == "violation" then violations = violations + 1 end
  error(a, 3)
end

local function locked(t, what)
  return setmetatable(t, {
    __index = function(_, k) error(what .. " has no field '" .. tostring(k) .. "'", 2) end,
    __metatable = false,
  })
end

local function make_handle(id)
  local h = {}
  local function read(self, ...)
    local n = select("#", ...)
    if n == 0 then return call("read", id, "l") end
    local out = {}
    for i = 1, n do
      out[i] = call("read", id, (select(i, ...)))
      if out[i] == nil then return (table.unpack or unpack)(out, 1, i) end
    end
    return (table.unpack or unpack)(out, 1, n)
  end
  h.read = read
  h.write = function(self, ...)
    for i = 1, select("#", ...) do call("write", id, tostring((select(i, ...)))) end
    return h
  end
  h.lines = function(self, fmt)
    return function() return call("read", id, fmt or "l") end
  end
  h.seek = function(self, whence, offset) return call("seek", id, whence or "cur", offset or 0) end
  h.flush = function() return h end
  h.close = function() return call("close", id) end
  return locked(h, "file handle")
end

local function make_io(skill)
  local io_t = {}
  io_t.open = function(path, mode)
    local id, msg = call("open", skill, path, mode or "r")
    if id == nil then return nil, msg end
    return make_handle(id)
  end
  io_t.lines = function(path, fmt)
    local id, msg = call("open", skill, path, "r")
    if id == nil then error(msg, 2) end
    return function()
      local v = call("read", id, fmt or "l")
      if v == nil then call("close", id) end
      return v
    end
  end
  return locked(io_t, "io")
end

local skill_env

local function load_skill(name, src, chunk, requirer_id)
  local fn, cerr = compile(src, chunk, skill_env(name, requirer_id, nil))
  if not fn then error("skill " .. name .. " does not compile: " .. tostring(cerr), 0) end
  local mod = fn()
  if mod == nil then mod = true end
  return mod
end

local function make_require(requirer_id, extra)
  local cache = {}
  return function(name)
    if type(name) ~= "string" then error("require: module name must be a string", 2) end
    local hit = cache[name]
    if hit ~= nil then return hit end
    if extra and extra[name] ~= nil then
      cache[name] = extra[name]
      return extra[name]
    end
    local src, chunk, dep = call("require", requirer_id, name)
    local mod = load_skill(dep, src, chunk, dep)   -- its own environment, with its own metadata
    cache[name] = mod
    return mod
  end
end

skill_env = function(name, requirer_id, extra)
  local e = new_env()
  e.io = make_io(name)
  e.require = make_require(requirer_id or name, extra)
  e.log = function(...)
    local parts = {}
    for i = 1, select("#", ...) do parts[i] = tostring((select(i, ...))) end
    call("log", name, concat(parts, " "))
    return true
  end
  e.exec = function(cmd, opts) return call("exec", name, cmd, opts) end
  return e
end

-- plain data only crosses between a plan and a skill (no functions, no shared metatables)
local function plain_copy(v, depth)
  local tv = type(v)
  if tv ~= "table" then
    if tv == "function" or tv == "thread" or tv == "userdata" then error("a " .. tv .. " is not plain data", 0) end
    return v
  end
  if depth > 64 then error("value nested too deeply (or cyclic)", 0) end
  local t = {}
  for k, x in next, v do t[plain_copy(k, depth + 1)] = plain_copy(x, depth + 1) end
  return t
end

local function message_of(e)
  if type(e) == "table" then
    local m = rawget(e, "message") or rawget(e, "error")
    if type(m) == "string" then return m end
    return "error object of type table"
  end
  return tostring(e)
end

-- luallm_test (seed 000 §7.2)
local function deep_eq(a, b, depth)
  if rawequal(a, b) then return true end
  if type(a) ~= "table" or type(b) ~= "table" or depth > 32 then return false end
  for k, v in next, a do if not deep_eq(v, rawget(b, k), depth + 1) then return false end end
  for k in next, b do if rawget(a, k) == nil then return false end end
  return true
end

local function show(v)
  if type(v) == "string" then return string.format("%q", v) end
  return tostring(v)
end

local function make_test_lib(skill)
  local T, cases = {}, {}
  T.case = function(name, fn)
    if type(fn) ~= "function" then error("test.case(name, fn): fn must be a function", 2) end
    cases[#cases + 1] = {name = tostring(name), fn = fn}
  end
  T.eq = function(actual, expected, label)
    if not deep_eq(actual, expected, 0) then
      error((label and (tostring(label) .. ": ") or "") .. "expected " .. show(expected) .. ", got " .. show(actual), 2)
    end
    return true
  end
  T.truthy = function(value, label)
    if not value then error((label and (tostring(label) .. ": ") or "") .. "expected a true value, got " .. show(value), 2) end
    return true
  end
  T.errors = function(fn, fragment)
    local ok, e = spcall(fn)
    if ok then error("expected an error, but the function returned", 2) end
    local msg = message_of(e)
    if fragment ~= nil and not string.find(msg, tostring(fragment), 1, true) then
      error("expected an error containing " .. show(fragment) .. ", got " .. show(msg), 2)
    end
    return msg
  end
  T.run_all = function()
    local results = {}
    for i = 1, #cases do
      local c = cases[i]
      local t0 = now()
      local ok, e = spcall(c.fn)
      local r = {name = c.name, status = ok and "pass" or "fail", duration_ms = (now() - t0) * 1000}
      if not ok then r.message = message_of(e) end
      results[i] = r
    end
    local json = call("report", skill, results)
    host.print(json)
    return results
  end
  return locked(T, "luallm_test")
end

local function run_test(skill, test_src, test_chunk)
  local T = make_test_lib(skill)
  local env = skill_env(skill, "test:" .. skill, {luallm_test = T})
  local fn, cerr = compile(test_src, test_chunk, env)
  if not fn then return false, "syntax", cerr end
  return enter(fn)
end

local function install_plan()
  local loaded = {}
  local function module_of(name)
    local m = loaded[name]
    if m == nil then
      local src, chunk = call("load", name)
      m = load_skill(name, src, chunk, name)
      loaded[name] = m
    end
    return m
  end
  local function invoke(name, fname, ...)
    local before = violations
    local okc, args = spcall(plain_copy, tpack(...), 0)
    if not okc then return {error = "skills." .. name .. ": bad argument (" .. message_of(args) .. ")", code = "invalid_argument"} end
    local okm, mod = spcall(module_of, name)
    local res
    if okm then
      local f = type(mod) == "table" and rawget(mod, fname) or nil
      if type(f) ~= "function" then
        return {error = "skill " .. name .. " does not define " .. fname, code = "skill_error"}
      end
      res = tpack(spcall(f, (table.unpack or unpack)(args, 1, args.n)))
    else
      res = {false, mod}
    end
    if not res[1] then
      return {error = message_of(res[2]), code = violations > before and "sandbox_violation" or "skill_error"}
    end
    local okr, copy = spcall(plain_copy, res[2], 0)
    if not okr then return {error = "skill " .. name .. " returned " .. message_of(copy), code = "skill_error"} end
    return copy
  end
  local proxies = {}
  local ns = setmetatable({}, {
    __index = function(_, name)
      if type(name) ~= "string" then return nil end
      local p = proxies[name]
      if p then return p end
      if name == "instructions" then   -- Agent Skills: load a SKILL.md body on invocation
        return function(skill_name)
          local status, res, code = sd("instructions", skill_name)
          if status == "fatal" then die(res, code) end
          if status ~= "ok" then return {error = res, code = "skill_error"} end
          return res
        end
      end
      local publics = call("describe", name)
      p = {}
      for i = 1, #publics do
        local fname = publics[i]
        p[fname] = function(first, ...)
          if rawequal(first, p) then return invoke(name, fname, ...) end
          return invoke(name, fname, first, ...)
        end
      end
      local default = publics[1]
      for i = 1, #publics do if publics[i] == "run" then default = "run" end end
      setmetatable(p, {
        __call = function(_, ...) return invoke(name, default, ...) end,
        __index = function(_, k) error("skill " .. name .. " has no public function '" .. tostring(k) .. "'", 2) end,
        __metatable = false,
      })
      proxies[name] = p
      return p
    end,
    __newindex = function() error("the skills table is read-only", 2) end,
    __metatable = false,
  })
  host.plan_env.skills = ns
end

return {run_test = run_test, install_plan = install_plan}
"""
