-- wrk script: POST a JSON body in which every "{{uuid}}" becomes a fresh UUID v4.
-- usage: wrk -s bench/invoke.lua <url> -- '<body template>' 'Header: value' ...
-- done() prints one line "BENCH_JSON {...}" that bench/lib.ts parses.

local threads = {}
local counter = 0

function setup(thread)
  counter = counter + 1
  thread:set("id", counter)
  table.insert(threads, thread)
end

-- Seeded from /dev/urandom: two runs against the same server must never draw the
-- same requestIds, or the server would answer idempotent replays instead of working.
local function seed()
  local f = io.open("/dev/urandom", "rb")
  local n = 0
  if f then
    local bytes = f:read(6)
    f:close()
    for i = 1, #bytes do
      n = n * 256 + bytes:byte(i)
    end
  else
    n = os.time() * 1000 + math.floor(os.clock() * 1000)
  end
  math.randomseed(n + (id or 0) * 7919)
end

local hex = { "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "a", "b", "c", "d", "e", "f" }
local variant = { "8", "9", "a", "b" }

local function uuid4()
  local out = {}
  for i = 1, 36 do
    if i == 9 or i == 14 or i == 19 or i == 24 then
      out[i] = "-"
    elseif i == 15 then
      out[i] = "4"
    elseif i == 20 then
      out[i] = variant[math.random(1, 4)]
    else
      out[i] = hex[math.random(1, 16)]
    end
  end
  return table.concat(out)
end

local template = "{}"

function init(args)
  seed()
  template = args[1] or template
  wrk.method = "POST"
  for i = 2, #args do
    local name, value = args[i]:match("^([^:]+):%s*(.*)$")
    if name then
      wrk.headers[name] = value
    end
  end
end

function request()
  local body = template:gsub("{{uuid}}", uuid4)
  return wrk.format(nil, nil, nil, body)
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'BENCH_JSON {"requests":%d,"durationUs":%d,"non2xx":%d,"socketErrors":%d,"p50Us":%d,"p99Us":%d}\n',
    summary.requests, summary.duration, e.status, e.connect + e.read + e.write + e.timeout,
    latency:percentile(50), latency:percentile(99)))
end
