# Progress texts: the short lines a turn streams before its answer.
# English (en). Every message here exists in every other locale with the same placeholders.

## Understanding the request (intent_started / intent_done)

stage-intent-started = Understanding your request…
stage-intent-understood = Understood.
# $count: how many sub-tasks were planned. Add a `[one]` variant for a singular wording.
stage-intent-found =
    { $count ->
       *[other] Found { $count } request(s).
    }
stage-intent-resumed = Got it, continuing your earlier request.
stage-intent-rerouted = OK, leaving the earlier request aside for your new one.
stage-intent-choice = I am not sure which service you mean yet.
stage-intent-chosen = OK, going with your choice.

## Planning (plan_started / plan_done)

stage-plan-started = Planning…
# $tasks: the runnable sub-tasks, joined with list-separator.
plan-runnable = On it: { $tasks }.
plan-blocked = I need a few details from you first.
# $tasks as above; $blocked: how many sub-tasks wait for details.
plan-runnable-and-blocked =
    On it: { $tasks }. { $blocked ->
       *[other] { $blocked } more step(s) need a few details from you.
    }
# Joins the sub-tasks of plan-runnable and cancel-done.
list-separator = { "; " }

## Calling sub-agents (agent_started / agent_failed)

# $task: the capability's name (its card's `name`).
stage-dispatch-started = Working on: { $task }…
# $task as above; $values: the sub-task's values as people write them, joined with value-separator.
stage-dispatch-started-values = Working on: { $task } ({ $values })…
value-separator = { ", " }
# $task as above; $reason: one of the dispatch-* texts.
stage-dispatch-failed = { $task }: { $reason }

## Summarizing (summarize_started)

stage-summarize-started = Summarizing…
