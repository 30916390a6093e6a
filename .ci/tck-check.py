#!/usr/bin/env python3
"""Judges an A2A TCK run test by test (see .ci/tck).

    tck-check.py --requirements REQS PYPROJECT
        the TCK's pyproject.toml asks for no dependency REQS lacks.
    tck-check.py --readme README.md --exit=CATEGORY=CODE ... REPORT.json ...
        prints the counts of each category (pytest-json-report files), and fails when
        - a test failed that is not in EXPECTED_FAILURES (a real failure),
        - a test in EXPECTED_FAILURES passed (fixed, or the TCK changed: take it off the list),
        - a report is missing, or the TCK's exit code does not match its report,
        - an expected failure is not documented in the README (its file and test named there).

EXPECTED_FAILURES lists the TCK tests that are wrong in the TCK itself, each with the section
of the A2A specification (the TCK's own copy, current_spec/specification.md) that shows it.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

# Tests that create a task with a plain (blocking) SendMessage and then expect it to be
# WORKING, or to still take messages, or to be cancelable. A2A §3.2.2 and a2a.proto
# (SendMessageConfiguration.return_immediately, "false (default)"): without returnImmediately
# the operation MUST wait until the task is terminal or interrupted before returning. The TCK's
# texts ("Hello from TCK!", "Task for cancel test", ...) are answered at once, so the task
# returned is COMPLETED.
BLOCKING = "§3.2.2: a plain SendMessage returns the task terminal or interrupted, never WORKING"
TERMINAL_MESSAGE = "§3.1.1 (Errors): a message to a terminal task is UnsupportedOperationError"
TERMINAL_CANCEL = "§3.1.5 (Errors): cancelling a terminal task is TaskNotCancelableError"
LIST = "tests/mandatory/protocol/test_tasks_list_method.py::"

EXPECTED_FAILURES: dict[str, str] = {
    # mandatory
    "tests/mandatory/jsonrpc/test_a2a_error_codes_enhanced.py::test_push_notification_not_supported_error_32003_enhanced":
        "TypeError inside the test (it calls transport_create_task_push_notification_config with "
        "too many arguments); §3.3.4: push-notification methods return -32003, which they do",
    "tests/mandatory/protocol/test_a2a_v030_new_methods.py::TestMethodMappingCompliance::test_core_method_mapping_compliance":
        f"{BLOCKING}; {TERMINAL_CANCEL}",
    "tests/mandatory/protocol/test_message_send_method.py::test_message_send_continue_task": TERMINAL_MESSAGE,
    "tests/mandatory/protocol/test_state_transitions.py::test_task_history_length": TERMINAL_MESSAGE,
    "tests/mandatory/protocol/test_tasks_cancel_method.py::test_tasks_cancel_valid": f"{BLOCKING}; {TERMINAL_CANCEL}",
    "tests/mandatory/security/test_agent_card_security.py::test_public_agent_card_access_control":
        "§8.2: the card is at https://{server_domain}/.well-known/agent-card.json; the test looks "
        "under the JSON-RPC URL (/a2a/.well-known/agent-card.json)",
    "tests/mandatory/security/test_agent_card_security.py::test_sensitive_information_protection":
        "§8.3.1: each interface MUST declare its URL; on a test machine that is the loopback address, "
        "which the test flags as sensitive",
    LIST + "TestBasicListing::test_list_tasks_empty_when_none_exist":
        "§3.1.4 ListTasksResponse.pageSize is the page size used (§6.5: pageSize 10 with totalSize 5), "
        "not the number of tasks returned",
    LIST + "TestPagination::test_default_page_size":
        "§3.1.4 ListTasksResponse.pageSize is the page size used (§6.5: pageSize 10 with totalSize 5), "
        "not the number of tasks returned",
    **{
        LIST + t: f"{BLOCKING} (the test's create_test_task waits for WORKING)"
        for t in [
            "TestBasicListing::test_list_all_tasks",
            "TestBasicListing::test_list_tasks_validates_required_fields",
            "TestBasicListing::test_list_tasks_sorted_by_timestamp_descending",
            "TestFiltering::test_filter_by_context_id",
            "TestFiltering::test_filter_by_status",
            "TestFiltering::test_filter_by_last_updated_after",
            "TestFiltering::test_combined_filters",
            "TestPagination::test_custom_page_size",
            "TestPagination::test_page_token_navigation",
            "TestPagination::test_last_page_detection",
            "TestPagination::test_total_size_accuracy",
            "TestHistoryLimiting::test_history_length_zero",
            "TestHistoryLimiting::test_history_length_custom",
            "TestHistoryLimiting::test_history_length_exceeds_actual",
            "TestArtifactInclusion::test_artifacts_excluded_by_default",
            "TestArtifactInclusion::test_artifacts_included_when_requested",
            "TestEdgeCasesAndErrors::test_default_page_size_is_50",
        ]
    },
    # capabilities
    "tests/optional/capabilities/test_message_send_capabilities.py::test_message_send_continue_with_contextid":
        TERMINAL_MESSAGE,
    # quality
    "tests/optional/quality/test_resilience.py::test_partial_update_recovery": TERMINAL_MESSAGE,
    "tests/optional/quality/test_task_state_quality.py::test_task_state_transitions": BLOCKING,
    "tests/optional/quality/test_task_state_quality.py::test_task_cancel_state_handling":
        f"{BLOCKING}; {TERMINAL_CANCEL}",
}


def check_requirements(requirements: Path, pyproject: Path) -> int:
    """Every dependency of the TCK's pyproject is pinned in `requirements`."""
    pinned = {
        re.split(r"[=<>!~\[ ]", line.strip(), maxsplit=1)[0].lower().replace("_", "-")
        for line in requirements.read_text().splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    }
    text = pyproject.read_text()
    block = re.search(r"^dependencies\s*=\s*\[(.*?)^\]", text, re.S | re.M)
    if not block:
        print(f"cannot find [project] dependencies in {pyproject}", file=sys.stderr)
        return 1
    wanted = {
        re.split(r"[=<>!~\[ ]", dep.strip(), maxsplit=1)[0].lower().replace("_", "-")
        for dep in re.findall(r'"([^"]+)"', block.group(1))
    }
    missing = sorted(wanted - pinned)
    if missing:
        print(f"the TCK needs {', '.join(missing)}: pin them in {requirements}", file=sys.stderr)
        return 1
    return 0


def judge(readme: Path, exits: dict[str, int], reports: list[Path]) -> int:
    documented = readme.read_text()
    # Documented: its file and its test (`Class::test_name`) are named in the README.
    problems = [
        f"{t}: expected failure not documented in {readme}"
        for t in EXPECTED_FAILURES
        if not all(part in documented for part in (t.split("::", 1)[0], t.split("::", 1)[1]))
    ]
    print(f"{'category':<14}{'passed':>8}{'failed':>8}{'expected':>10}{'skipped':>9}{'xfail':>7}{'total':>7}")
    for report in reports:
        category = report.stem
        if not report.exists():
            problems.append(f"{category}: no report ({report}); see {report.with_suffix('.log')}")
            continue
        data = json.loads(report.read_text())
        outcomes: dict[str, str] = {t["nodeid"]: t["outcome"] for t in data.get("tests", [])}
        failed = {t for t, o in outcomes.items() if o in ("failed", "error")}
        passed = {t for t, o in outcomes.items() if o == "passed"}
        expected = failed & EXPECTED_FAILURES.keys()
        summary = data.get("summary", {})
        print(
            f"{category:<14}{len(passed):>8}{len(failed - expected):>8}{len(expected):>10}"
            f"{summary.get('skipped', 0):>9}{summary.get('xfailed', 0) + summary.get('xpassed', 0):>7}{len(outcomes):>7}"
        )
        for t in sorted(failed - expected):
            problems.append(f"{category}: FAILED {t}")
        for t in sorted(passed & EXPECTED_FAILURES.keys()):
            problems.append(f"{category}: {t} passes now: take it off the expected failures (and the README)")
        code = exits.get(category)
        if code not in (0, 1) or (code == 0) != (not failed):
            problems.append(f"{category}: the TCK exited {code} with {len(failed)} failure(s); see {report.with_suffix('.log')}")
    if problems:
        print("\nTCK: NOT green", file=sys.stderr)
        for p in problems:
            print(f"  {p}", file=sys.stderr)
        return 1
    print("\nTCK green: every failure is a documented TCK bug (README, 'The A2A TCK')")
    return 0


def main(argv: list[str]) -> int:
    if argv[:1] == ["--requirements"]:
        return check_requirements(Path(argv[1]), Path(argv[2]))
    readme = Path("README.md")
    exits: dict[str, int] = {}
    reports: list[Path] = []
    args = iter(argv)
    for a in args:
        if a == "--readme":
            readme = Path(next(args))
        elif a.startswith("--exit="):
            category, code = a.removeprefix("--exit=").split("=")
            exits[category] = int(code)
        else:
            reports.append(Path(a))
    return judge(readme, exits, reports)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
