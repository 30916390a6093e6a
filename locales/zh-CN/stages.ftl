# Progress texts: the short lines a turn streams before its answer.
# Simplified Chinese (zh-CN). Every message here exists in every other locale with the same placeholders.

## Understanding the request (intent_started / intent_done)

stage-intent-started = 正在理解您的需求…
stage-intent-understood = 已理解您的需求。
# $count: how many sub-tasks were planned.
stage-intent-found = 识别到 { $count } 项需求。
stage-intent-resumed = 收到，继续处理您之前的请求。
stage-intent-rerouted = 好的，先放下之前未完成的请求，为您处理新的需求。
stage-intent-choice = 我还不确定您想办理哪一项。
stage-intent-chosen = 好的，按您的选择继续。

## Planning (plan_started / plan_done)

stage-plan-started = 正在规划任务…
# $tasks: the runnable sub-tasks, joined with list-separator.
plan-runnable = 好的，我来为您处理：{ $tasks }。
plan-blocked = 还需要您补充一些信息才能继续。
# $tasks as above; $blocked: how many sub-tasks wait for details.
plan-runnable-and-blocked = 好的，我来为您处理：{ $tasks }。另有 { $blocked } 项还需要您补充一些信息。
# Joins the sub-tasks of plan-runnable and cancel-done.
list-separator = ；

## Calling sub-agents (agent_started / agent_failed)

# $task: the capability's name (its card's `name`).
stage-dispatch-started = 正在为您办理{ $task }…
# $task as above; $values: the sub-task's values as people write them, joined with value-separator.
stage-dispatch-started-values = 正在为您办理{ $task }：{ $values }…
value-separator = 、
# $task as above; $reason: one of the dispatch-* texts.
stage-dispatch-failed = { $task }：{ $reason }

## Summarizing (summarize_started)

stage-summarize-started = 正在整理结果…
