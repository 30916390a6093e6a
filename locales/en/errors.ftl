# Failures told to the user: why a sub-task failed, and turns that end in an error.
# English (en).

## Why a sub-task failed: one message per DispatchError::code() (dispatch-<code>)

# Four kinds, each with what the user can do: unavailable (retry later), timed out (retry
# later), a bad answer (rephrase or ask for a human), refused (rephrase or ask for a human).
-dispatch-unusable = the service returned an unusable result
-dispatch-bad-answer = { -dispatch-unusable } (its answer did not match what it promises); you can rephrase and try again, or ask for a human agent
dispatch-connect = the service could not be reached (it is unavailable); please try again later
dispatch-disconnected = the connection to the service was lost; please try again later
dispatch-timeout = the service did not answer in time; please try again later
dispatch-status = { -dispatch-unusable } (it is unavailable right now); please try again later, or ask for a human agent if it keeps failing
dispatch-protocol = { -dispatch-bad-answer }
dispatch-too-large = { -dispatch-bad-answer }
dispatch-output-rejected = { -dispatch-bad-answer }
dispatch-agent-error = the service reported a failure (it refused the request); you can rephrase and try again, or ask for a human agent
dispatch-invalid-inputs = some details were not in a usable form; please check them and give them again
dispatch-circuit-open = the service is temporarily unavailable; please try again later, or ask for a human agent
dispatch-deadline = it took too long
dispatch-input-required = more details are needed from you
# Not run because a sub-task it depends on failed.
dispatch-skipped = skipped because an earlier step failed

## Turns that end in an error event

error-turn-failed = Sorry, something went wrong while handling your request. Please try again.
error-session-store = Sorry, conversations are unavailable right now. Please try again later.
# An earlier turn of the thread still runs: this one waited past its deadline or the queue is full.
error-thread-busy = Sorry, this conversation is still busy with an earlier request. Please try again in a moment.
# The user already has supervisor.max_sessions_per_user sessions; this turn would start one more.
error-too-many-sessions = Sorry, you have too many open conversations. Please continue an existing one or try again later.
# The stream is cut by a shutdown; the turn, if still running, is cut off and saved as interrupted.
error-shutting-down = The service is restarting and this request was interrupted. Please try again in a moment.

## Switchboard as an A2A agent

# The description of the supervisor's own Agent Card (served in English).
a2a-card-description = A supervisor that plans requests across its sub-agents and asks for missing details.
