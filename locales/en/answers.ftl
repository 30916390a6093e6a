# Answers: the text of the final event (summary, questions, direct answers, cancel, escalation).
# English (en).

## The template summary of an executed plan

summary-done-header = Done:
summary-failed-header = Could not be done:
# $task: the sub-task; $reason: one of the dispatch-* texts.
summary-failed-item = - { $task }: { $reason }
summary-unknown-reason = unknown reason
summary-needed-header = Still needed from you:
# $examples: the example values, joined with summary-example-separator.
summary-needed-hint = Just reply, for example: "{ $examples }", or fill in the form.
summary-example-separator = { ", " }
summary-nothing = There was nothing to do.
# One bullet: a finished sub-task's message, an agent's own question, a capability.
list-item = - { $text }
# The heading of capability cards that declare no domain, when others do.
capabilities-other-domain = Other

## Asking for missing details (the blocked event and the summary)

# $keys: the ask-key-* lines, one per line.
blocked-ask =
    To go on, I need:
    { $keys }
# $key: the key's description; $example: its example value; $task: the sub-task it is for
# (named only when several sub-tasks are asking).
ask-key = - { $key }
ask-key-example = - { $key } (e.g. { $example })
ask-key-for = - { $key } (for: { $task })
ask-key-for-example = - { $key } (for: { $task }; e.g. { $example })
ask-key-invalid = - { $key }: the value given cannot be used, please give it again
ask-key-invalid-example = - { $key }: the value given cannot be used, please give it again (e.g. { $example })
# An answer given after the pending clarification expired. $answer: the answer itself.
answer-expired-note =
    (Your earlier request timed out waiting for details and was dropped.)
    { $answer }

## Direct answers to simple intents

# $capabilities: one list-item per enabled capability card.
direct-greeting =
    Hello! I'm your assistant. I can help you with:
    { $capabilities }
    What can I do for you?
direct-thanks = You're welcome! Anything else I can help with?
direct-capabilities =
    I can help you with:
    { $capabilities }
direct-chitchat =
    I'm your assistant, best at getting things done. For example:
    { $capabilities }
direct-out-of-scope =
    Sorry, that is outside what I can handle. I can help you with:
    { $capabilities }

## Cancel words

# $tasks: the dropped sub-tasks, joined with list-separator.
cancel-done = OK, cancelled: { $tasks }. Anything else I can help with?
cancel-nothing = OK. Anything else I can help with?
cancel-choice = OK, let's leave that. Anything else I can help with?

## Did you mean (a choice among plausible capabilities)

# $options: the numbered candidates, one per line (choice-option).
choice-question =
    I am not sure which of these you mean:
    { $options }
    Reply with a number or a name (e.g. "the first one"), or tell me in other words.
# $n: the position (1, 2, 3); $name / $description: the capability card's.
choice-option = { $n }. { $name }: { $description }
# The description of the `intent` key of the question's semantic_info entry.
choice-key-description = What you would like to do

## Handing over to a human (escalated)

escalation-user-requested = Sure, I'm handing you over to a human agent. Please hold on.
escalation-sensitive = A human agent will take this from here. Please hold on.
escalation-repeated-failures = Sorry, I could not get this done several times in a row. I'm handing you over to a human agent.
escalation-clarification-exhausted = It seems we could not settle the details I need. I'm handing you over to a human agent.
# The escalation card's summary for the human agent. $query: what the user wrote.
escalation-summary = User request: { $query }
