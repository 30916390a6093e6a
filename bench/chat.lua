-- wrk script: every request is one turn of a new thread (no thread_id), SSE out, each from a
-- user of its own (a fixed user would reach supervisor.max_sessions_per_user after 1,000 turns
-- and be refused from then on).
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "text/event-stream"
local n = 0
request = function()
  n = n + 1
  local body = '{"query":"北京天气怎么样？把1000美元换成人民币","user_id":"bench-' .. n .. '"}'
  return wrk.format(nil, nil, nil, body)
end
