# Failures told to the user: why a sub-task failed, and turns that end in an error.
# Simplified Chinese (zh-CN).

## Why a sub-task failed: one message per DispatchError::code() (dispatch-<code>)

# Four kinds, each with what the user can do: unavailable (retry later), timed out (retry
# later), a bad answer (rephrase or ask for a human), refused (rephrase or ask for a human).
-dispatch-unusable = 服务返回了无法使用的结果
-dispatch-bad-answer = { -dispatch-unusable }（答复不符合约定，已放弃使用），您可以换个说法再试，或回复“转人工”
dispatch-connect = 服务暂时无法连接（服务不可用），请稍后再试
dispatch-disconnected = 与服务的连接中断，请稍后再试
dispatch-timeout = 服务响应超时，请稍后再试
dispatch-status = { -dispatch-unusable }（服务暂时不可用），请稍后再试；如果一直不行，可以回复“转人工”
dispatch-protocol = { -dispatch-bad-answer }
dispatch-too-large = { -dispatch-bad-answer }
dispatch-output-rejected = { -dispatch-bad-answer }
dispatch-agent-error = 服务处理失败（服务拒绝了这个请求），您可以换个说法再试，或回复“转人工”
dispatch-invalid-inputs = 提供的信息格式不正确，请检查后重新提供
dispatch-circuit-open = 服务暂时不可用，请稍后再试；也可以回复“转人工”
dispatch-deadline = 处理超时
dispatch-input-required = 还需要您补充信息
# Not run because a sub-task it depends on failed.
dispatch-skipped = 前置步骤未完成，未执行

## Turns that end in an error event

error-turn-failed = 抱歉，处理您的请求时出现了问题，请稍后再试。
error-session-store = 抱歉，会话服务暂时不可用，请稍后再试。
# An earlier turn of the thread still runs: this one waited past its deadline or the queue is full.
error-thread-busy = 抱歉，这个会话还在处理您之前的请求，请稍后再试。
# The user already has supervisor.max_sessions_per_user sessions; this turn would start one more.
error-too-many-sessions = 抱歉，您的会话数量已达上限，请继续已有的会话或稍后再试。
# The stream is cut by a shutdown; the turn, if still running, is cut off and saved as interrupted.
error-shutting-down = 服务正在重启，本次请求已中断，请稍后重试。

## Switchboard as an A2A agent

# The description of the supervisor's own Agent Card (served in English).
a2a-card-description = 一个在各子智能体之间规划请求、并询问缺失信息的主管服务。
