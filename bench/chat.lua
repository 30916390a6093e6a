-- wrk script: every request is one turn of a new thread (no thread_id), SSE out.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "text/event-stream"
wrk.body = '{"query":"北京天气怎么样？把1000美元换成人民币","user_id":"bench"}'
