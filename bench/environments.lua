-- wrk script for bench/environments.ts: bench/invoke.lua's POST (a fresh UUID v4 for each "{{uuid}}"), each
-- request to the next of several hosts (one environment each, round-robin), all on one address.
-- usage (from the repository's root): wrk -s bench/environments.lua http://127.0.0.1:<port>/actions/… --
--   '<body template>' 'host1,host2,…' 'Header: value' ...
-- done() prints bench/invoke.lua's "BENCH_JSON {...}" line.

dofile("bench/invoke.lua")

local hosts = {}
local next_host = 0
local invoke_init = init
local invoke_request = request

function init(args)
  for host in string.gmatch(args[2] or "", "[^,]+") do
    table.insert(hosts, host)
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
  return invoke_request()
end
