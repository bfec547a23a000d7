-- wrk script for bench/environments.ts: bench/invoke.lua's POST (a fresh UUID v4 for each "{{uuid}}"), each
-- request to the next of several targets (round-robin), all on one address. A target is a Host header (one
-- environment each), or `host|token`: that host with its own bearer token (one caller each).
-- usage (from the repository's root): wrk -s bench/environments.lua http://127.0.0.1:<port>/actions/… --
--   '<body template>' 'host1,host2|token2,…' 'Header: value' ...
-- done() prints bench/invoke.lua's "BENCH_JSON {...}" line.

dofile("bench/invoke.lua")

local hosts = {}
local tokens = {}
local next_host = 0
local invoke_init = init
local invoke_request = request

function init(args)
  for target in string.gmatch(args[2] or "", "[^,]+") do
    local host, token = target:match("^([^|]+)|(.+)$")
    table.insert(hosts, host or target)
    table.insert(tokens, token or false)
  end
  local rest = { args[1] }
  for i = 3, #args do
    table.insert(rest, args[i])
  end
  invoke_init(rest)
end

function request()
  next_host = next_host % #hosts + 1
  wrk.headers["Host"] = hosts[next_host]
  if tokens[next_host] then
    wrk.headers["Authorization"] = "Bearer " .. tokens[next_host]
  end
  return invoke_request()
end
