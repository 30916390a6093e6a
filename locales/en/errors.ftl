# Failures told to the user: why a sub-task failed, and turns that end in an error.
# English (en).

## Why a sub-task failed: one message per DispatchError::code() (dispatch-<code>)

-dispatch-unusable = the service returned an unusable result
dispatch-connect = the service could not be reached
dispatch-disconnected = the connection to the service was lost
dispatch-timeout = the service did not answer in time
dispatch-status = { -dispatch-unusable }
dispatch-protocol = { -dispatch-unusable }
dispatch-too-large = { -dispatch-unusable }
dispatch-output-rejected = { -dispatch-unusable }
dispatch-agent-error = the service reported a failure
dispatch-invalid-inputs = some details were not in a usable form
dispatch-circuit-open = the service is temporarily unavailable, please try again later
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
