-- wrk script of `bench/run.sh reload`: the turn of chat.lua (a new thread and user per turn, SSE
-- out), and each response checked: a complete turn is status 200 with two `agent_done` events
-- and the final `answer`. A turn refused or failed inside a 200 stream (an `error` done event, a
-- sub-task failed, a plan without both agents) counts as incomplete. Prints the counts at the end.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "text/event-stream"

local threads = {}
function setup(thread)
  thread:set("tid", #threads + 1)
  table.insert(threads, thread)
end

function init(args)
  n, complete, incomplete, sample = 0, 0, 0, ""
end

request = function()
  n = n + 1
  local body = '{"query":"北京天气怎么样？把1000美元换成人民币","user_id":"check-' .. tid .. '-' .. n .. '"}'
  return wrk.format(nil, nil, nil, body)
end

function response(status, headers, body)
  local _, agents_done = body:gsub("event: agent_done", "")
  if status == 200 and agents_done == 2 and body:find("event: answer", 1, true) then
    complete = complete + 1
  else
    incomplete = incomplete + 1
    if sample == "" then sample = status .. " " .. body:sub(-300) end
  end
end

function done(summary, latency, requests)
  local c, i = 0, 0
  for _, t in ipairs(threads) do
    c = c + t:get("complete")
    i = i + t:get("incomplete")
    local s = t:get("sample")
    if s ~= "" then io.write("first incomplete turn (status, end of body): " .. s .. "\n") end
  end
  io.write(string.format("checked turns: %d complete, %d incomplete\n", c, i))
end
