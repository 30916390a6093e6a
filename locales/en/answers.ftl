# Answers: the text of the final event (summary, questions, direct answers, cancel, escalation).
# English (en).

## The template summary of an executed plan

summary-done-header = Done:
summary-failed-header = Could not be done:
# $task: the sub-task; $reason: one of the dispatch-* texts.
summary-failed-item = - { $task }: { $reason }
summary-unknown-reason = unknown reason
# The parts of a request no capability covers follow, one list-item each.
summary-unhandled-header = I can't help with these parts of your request:
# Parts of a request some capabilities may mean, none clearly; one summary-unresolved-item each.
summary-unresolved-header = I wasn't sure what you meant by these parts; tell me if you want one of these:
# $part: the part as written; $names: capability names joined with summary-example-separator.
summary-unresolved-item = - "{ $part }": { $names }
summary-needed-header = Still needed from you:
# $examples: the example values, joined with summary-example-separator.
summary-needed-hint = Just reply, for example: "{ $examples }", or fill in the form.
# A yes / no question before remembered values drive a write. $task: the capability's name;
# $values: confirm-value items joined with value-separator.
confirm-ask = Shall I go ahead with { $task } using { $values }? Reply "yes", or tell me what to change.
# $key: the key's description; $value: the remembered value.
confirm-value = { $key }: { $value }
summary-needed-hint-no-form = Just reply, for example: "{ $examples }".
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
# A value that was not accepted. $key: the key's description; $value: the value given;
# $reason: one of the reason-* texts; $example: the key's example value.
ask-key-rejected = - { $key }: "{ $value }" cannot be used: { $reason }
ask-key-rejected-example = - { $key }: "{ $value }" cannot be used: { $reason } (e.g. { $example })
# $options: the allowed values, joined with option-separator.
reason-not-an-option = please choose one of { $options }
# $options: the first allowed values; $count: how many there are.
reason-not-an-option-more = please choose one of { $options }, … ({ $count } in all)
reason-past-date = that date has passed, please give today or a later date
reason-invalid = it is not in the expected form, please give it again
option-separator = { ", " }
# An answer given after the pending clarification expired. $tasks: what it was; $answer: the answer itself.
answer-expired-note =
    (Your earlier request — { $tasks } — timed out waiting for details and was dropped.)
    { $answer }
# The late answer to an expired request brings its values. $tasks: what the request was.
answer-expired-restart = Your earlier request — { $tasks } — timed out waiting for details and was dropped. Shall I start it again with the details you just gave? Reply "yes" to restart, or tell me what you need now.

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
direct-angry =
    I'm really sorry for the trouble, and I understand how frustrating this is. Tell me what you need and I'll do my best — or reply "human agent" and a person will take over.
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
# The same, for a part of a planned request no capability clearly means; $part: the part as written.
choice-part-description = Which service did you mean by "{ $part }"?

## Handing over to a human (escalated)

escalation-user-requested = Sure, I'm handing you over to a human agent. Please hold on.
escalation-sensitive = A human agent will take this from here. Please hold on.
escalation-self-harm =
    I'm really sorry you're feeling this way, and I'm worried about you. You don't have to go through this alone — please reach out now:
    - Call or text your local crisis line (in the US: 988; in the UK and Ireland: Samaritans 116 123).
    - If you are in immediate danger, call your local emergency number.
    I'm connecting you with a human agent right away.
escalation-abusive = I'm sorry this has been frustrating. A human agent will take it from here. Please hold on.
# Summaries for the human agent, by reason. $query: what the user wrote.
escalation-summary-user-requested = The user asked for a human: { $query }
escalation-summary-sensitive = The message has sensitive content and needs a human's judgement: { $query }
escalation-summary-self-harm = [URGENT] The user expressed thoughts of self-harm; follow up at once: { $query }
escalation-summary-abusive = The user is upset and used abusive language: { $query }
escalation-summary-prompt-injection = The message tried to change the assistant's instructions (prompt injection): { $query }
escalation-summary-service-unavailable = A service the request needed is down (its circuit is open): { $query }
escalation-repeated-failures = Sorry, I could not get this done several times in a row. I'm handing you over to a human agent.
escalation-clarification-exhausted = It seems we could not settle the details I need. I'm handing you over to a human agent.
# The escalation card's summary for the human agent. $query: what the user wrote.
escalation-summary = User request: { $query }
escalation-prompt-injection = I can't follow instructions like that. A human agent will take this from here. Please hold on.
# Offered after the summary when a service is down (supervisor.on_circuit_open: escalate).
escalation-service-unavailable = One of our services is unavailable right now. I'm handing you over to a human agent who can help. Please hold on.

## Permissions (auth)

# A write sub-task while nobody is signed in. $task: the sub-task's description.
auth-sign-in-required = "{ $task }" needs you to sign in first, so I have not done it yet.
# A write sub-task the signed-in user lacks a permission for. $task as above.
auth-scope-missing = Your account does not have the permission for "{ $task }", so I have not done it.

## Guardrails

# The answer to a message that matched the prompt-injection screen (injection_action: refuse).
guard-refused = Sorry, I can't follow instructions that try to change how I work. I'm happy to help with your travel or other requests.
