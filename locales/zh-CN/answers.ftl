# Answers: the text of the final event (summary, questions, direct answers, cancel, escalation).
# Simplified Chinese (zh-CN).

## The template summary of an executed plan

summary-done-header = 已为您完成：
summary-failed-header = 未能完成：
# $task: the sub-task; $reason: one of the dispatch-* texts.
summary-failed-item = - { $task }：{ $reason }
summary-unknown-reason = 未知原因
# The parts of a request no capability covers follow, one list-item each.
summary-unhandled-header = 以下请求我暂时无法处理：
# Parts of a request some capabilities may mean, none clearly; one summary-unresolved-item each.
summary-unresolved-header = 以下内容我不确定您指的是哪项服务，如需办理请告诉我：
# $part: the part as written; $names: capability names joined with summary-example-separator.
summary-unresolved-item = - “{ $part }”：{ $names }
summary-needed-header = 还需要您提供：
# $examples: the example values, joined with summary-example-separator.
summary-needed-hint = 您可以直接回复，例如：“{ $examples }”，或在表单中填写。
# A yes / no question before remembered values drive a write. $task: the capability's name;
# $values: confirm-value items joined with value-separator.
confirm-ask = 请确认是否按以下信息为您办理{ $task }：{ $values }。回复“确认”继续，或直接告诉我要修改的内容。
# $key: the key's description; $value: the remembered value.
confirm-value = { $key }：{ $value }
summary-needed-hint-no-form = 您可以直接回复，例如：“{ $examples }”。
summary-example-separator = ，
summary-nothing = 没有需要执行的任务。
# One bullet: a finished sub-task's message, an agent's own question, a capability.
list-item = - { $text }
# The heading of capability cards that declare no domain, when others do.
capabilities-other-domain = 其他

## Asking for missing details (the blocked event and the summary)

# $keys: the ask-key-* lines, one per line.
blocked-ask =
    为了继续，还需要您提供：
    { $keys }
# $key: the key's description; $example: its example value; $task: the sub-task it is for
# (named only when several sub-tasks are asking).
ask-key = - { $key }
ask-key-example = - { $key }（例如：{ $example }）
ask-key-for = - { $key }（用于{ $task }）
ask-key-for-example = - { $key }（用于{ $task }，例如：{ $example }）
ask-key-invalid = - { $key }：您提供的值无法使用，请重新提供
ask-key-invalid-example = - { $key }：您提供的值无法使用，请重新提供（例如：{ $example }）
# A value that was not accepted. $key: the key's description; $value: the value given;
# $reason: one of the reason-* texts; $example: the key's example value.
ask-key-rejected = - { $key }：“{ $value }”无法使用，{ $reason }
ask-key-rejected-example = - { $key }：“{ $value }”无法使用，{ $reason }（例如：{ $example }）
# $options: the allowed values, joined with option-separator.
reason-not-an-option = 请从以下选项中选择：{ $options }
# $options: the first allowed values; $count: how many there are.
reason-not-an-option-more = 请从以下选项中选择：{ $options } 等 { $count } 项
reason-past-date = 这个日期已经过去了，请提供今天或以后的日期
reason-invalid = 格式不符合要求，请重新提供
option-separator = 、
# An answer given after the pending clarification expired. $tasks: what it was; $answer: the answer itself.
answer-expired-note =
    （您之前的请求「{ $tasks }」等待补充信息超时，已自动取消。）
    { $answer }
# The late answer to an expired request brings its values. $tasks: what the request was.
answer-expired-restart = 您之前的请求「{ $tasks }」等待补充信息超时，已自动取消。要用您刚才提供的信息重新办理吗？回复“是”即可重新开始，或直接告诉我新的需求。

## Direct answers to simple intents

# $capabilities: one list-item per enabled capability card.
direct-greeting =
    您好！我是您的智能助理，可以帮您：
    { $capabilities }
    请问有什么可以帮您？
direct-thanks = 不客气！还有其他需要帮忙的吗？
direct-capabilities =
    我可以帮您：
    { $capabilities }
direct-chitchat =
    我是您的智能助理，更擅长帮您办事。比如：
    { $capabilities }
direct-angry =
    非常抱歉给您带来了不好的体验，我理解您的心情。我会尽力帮您解决：请告诉我您想办理的事情；如果您希望由人工客服处理，请回复“转人工”。
direct-out-of-scope =
    抱歉，这个问题超出了我能处理的范围。我可以帮您：
    { $capabilities }

## Cancel words

# $tasks: the dropped sub-tasks, joined with list-separator.
cancel-done = 好的，已取消：{ $tasks }。还有什么可以帮您？
cancel-nothing = 好的。还有什么可以帮您？
cancel-choice = 好的，这个问题先不处理了。还有什么可以帮您？

## Did you mean (a choice among plausible capabilities)

# $options: the numbered candidates, one per line (choice-option).
choice-question =
    我不太确定您想办理哪一项，您是指：
    { $options }
    请回复序号或名称（例如“第一个”），或换个说法告诉我。
# $n: the position (1, 2, 3); $name / $description: the capability card's.
choice-option = { $n }. { $name }：{ $description }
# The description of the `intent` key of the question's semantic_info entry.
choice-key-description = 您想办理的事项
# The same, for a part of a planned request no capability clearly means; $part: the part as written.
choice-part-description = “{ $part }”是指哪项服务？

## Handing over to a human (escalated)

escalation-user-requested = 好的，正在为您转接人工客服，请稍候。
escalation-sensitive = 这个问题需要人工客服来处理，正在为您转接，请稍候。
escalation-self-harm =
    听到您这样说，我很担心您。您并不孤单，请马上和能帮助您的人聊一聊：
    - 全国心理援助热线：400-161-9995（24 小时）
    - 北京心理危机研究与干预中心：010-82951332
    - 如果您有立即的危险，请拨打 120 或 110。
    我正在为您优先转接人工客服，请稍候。
escalation-abusive = 抱歉让您不满意了。为了更好地帮您解决问题，正在为您转接人工客服，请稍候。
# Summaries for the human agent, by reason. $query: what the user wrote.
escalation-summary-user-requested = 用户要求人工服务：{ $query }
escalation-summary-sensitive = 用户消息包含敏感内容，需要人工判断：{ $query }
escalation-summary-self-harm = 【紧急】用户表达了自我伤害的想法，请立即跟进：{ $query }
escalation-summary-abusive = 用户情绪激动，使用了辱骂性语言：{ $query }
escalation-summary-prompt-injection = 用户消息试图改变助手的指令（提示词注入）：{ $query }
escalation-summary-service-unavailable = 请求所需的服务暂时不可用（熔断中）：{ $query }
escalation-repeated-failures = 抱歉，连续几次都没能帮您办成，正在为您转接人工客服，请稍候。
escalation-clarification-exhausted = 看起来我们没能确认所需的信息，正在为您转接人工客服，请稍候。
# The escalation card's summary for the human agent. $query: what the user wrote.
escalation-summary = 用户请求：{ $query }
escalation-prompt-injection = 抱歉，我不能执行这类指令。正在为您转接人工客服，请稍候。
# Offered after the summary when a service is down (supervisor.on_circuit_open: escalate).
escalation-service-unavailable = 部分服务暂时不可用，正在为您转接人工客服，请稍候。

## Permissions (auth)

# A write sub-task while nobody is signed in. $task: the sub-task's description.
auth-sign-in-required = 「{ $task }」需要您先登录，我还没有为您办理。
# A write sub-task the signed-in user lacks a permission for. $task as above.
auth-scope-missing = 您的账号没有「{ $task }」的权限，我没有为您办理。

## Guardrails

# The answer to a message that matched the prompt-injection screen (injection_action: refuse).
guard-refused = 抱歉，我不能执行试图改变我工作方式的指令。如需查询航班、酒店、天气等服务，请直接告诉我。
