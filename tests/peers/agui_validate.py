#!/usr/bin/env python3
"""Validate an AG-UI event stream against the ag-ui-protocol pydantic models.

    some_producer | python agui_validate.py [--allow-extra] [--no-sequence] [FILE ...]

Input (stdin, or the given files): either one JSON object per line, or an SSE
stream (`data:` lines; multi-line data joined with "\\n"; `event:`, `id:`,
`retry:` and `:` comment lines ignored; CRLF accepted). Blank lines are ignored.

Each event is validated against `ag_ui.core.Event`, the discriminated union of
every event type keyed by `type`.

On top of the models (which are lenient: extra="allow", populate_by_name=True)
the following are reported as errors by default:
  * unknown fields anywhere in the event (disable with --allow-extra);
  * keys not in the wire spelling (camelCase), e.g. `thread_id` instead of
    `threadId` (the models would silently accept them);
  * sequencing (disable with --no-sequence): the stream starts with
    RUN_STARTED; nothing but a new RUN_STARTED follows RUN_FINISHED/RUN_ERROR;
    TEXT_MESSAGE_CONTENT/END need an open TEXT_MESSAGE_START with the same
    messageId; STEP_FINISHED needs an open STEP_STARTED with the same stepName;
    messages and steps are closed before RUN_FINISHED.

Prints one line per error and exits 1 if any; always ends with `N events valid`
(N = events that passed model validation) or `N events valid, M invalid`.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Iterable, Iterator

from pydantic import BaseModel, TypeAdapter, ValidationError

from ag_ui.core import Event, EventType

EVENT_ADAPTER: TypeAdapter = TypeAdapter(Event)


def read_payloads(lines: Iterable[str]) -> Iterator[tuple[int, str]]:
    """Yield (line_no, json_text) from NDJSON or SSE input."""
    data_buf: list[str] = []
    data_line = 0
    for no, raw in enumerate(lines, 1):
        line = raw.rstrip("\r\n").rstrip("\r")
        if line.startswith("data:"):
            if not data_buf:
                data_line = no
            val = line[5:]
            data_buf.append(val[1:] if val.startswith(" ") else val)
            continue
        if line == "":
            if data_buf:
                yield data_line, "\n".join(data_buf)
                data_buf = []
            continue
        if line.startswith(":") or line.startswith(("event:", "id:", "retry:")):
            continue
        if data_buf:  # malformed: non-data line inside an SSE event; flush
            yield data_line, "\n".join(data_buf)
            data_buf = []
        yield no, line
    if data_buf:
        yield data_line, "\n".join(data_buf)


def _extras(model: Any, path: str) -> list[str]:
    out: list[str] = []
    if isinstance(model, BaseModel):
        for k in (model.model_extra or {}):
            out.append(f"{path}.{k}" if path else k)
        for name, field in type(model).model_fields.items():
            val = getattr(model, name, None)
            # free-form fields (metadata, content, state, payload, ...) are typed Any / Dict[str, Any]
            out.extend(_extras(val, f"{path}.{field.alias or name}" if path else (field.alias or name)))
    elif isinstance(model, list):
        for i, v in enumerate(model):
            out.extend(_extras(v, f"{path}[{i}]"))
    return out


def _diff(a: Any, b: Any, path: str = "") -> list[str]:
    """Differences between the input JSON and the canonical (by_alias) dump."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in a.keys() - b.keys():
            out.append(f"{path}.{k}".lstrip(".") + ": not a wire field name (snake_case or unknown alias?)")
        for k in a.keys() & b.keys():
            out.extend(_diff(a[k], b[k], f"{path}.{k}"))
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        out = []
        for i, (x, y) in enumerate(zip(a, b)):
            out.extend(_diff(x, y, f"{path}[{i}]"))
        return out
    if a != b:
        return [f"{path.lstrip('.')}: value {json.dumps(a)[:60]} normalised to {json.dumps(b)[:60]}"]
    return []


class Sequencer:
    def __init__(self) -> None:
        self.state = "idle"  # idle | running | finished
        self.open_msgs: set[str] = set()
        self.open_steps: list[str] = []
        self.first = True

    def feed(self, ev: Any) -> list[str]:
        t = ev.type.value if isinstance(ev.type, EventType) else str(ev.type)
        errs: list[str] = []
        if t == "RUN_STARTED":
            if self.state == "running":
                errs.append("RUN_STARTED while a run is still running")
            self.state = "running"
            self.open_msgs.clear()
            self.open_steps.clear()
            return errs
        if self.state == "idle":
            errs.append(f"{t} before RUN_STARTED")
            self.state = "running"  # report once
        elif self.state == "finished":
            errs.append(f"{t} after the run finished")
        if t == "TEXT_MESSAGE_START":
            if ev.message_id in self.open_msgs:
                errs.append(f"TEXT_MESSAGE_START for already open messageId {ev.message_id!r}")
            self.open_msgs.add(ev.message_id)
        elif t in ("TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END"):
            if ev.message_id not in self.open_msgs:
                errs.append(f"{t} for messageId {ev.message_id!r} with no open TEXT_MESSAGE_START")
            if t == "TEXT_MESSAGE_END":
                self.open_msgs.discard(ev.message_id)
            elif not ev.delta:
                errs.append("TEXT_MESSAGE_CONTENT with empty delta")
        elif t == "STEP_STARTED":
            self.open_steps.append(ev.step_name)
        elif t == "STEP_FINISHED":
            if ev.step_name in self.open_steps:
                self.open_steps.remove(ev.step_name)
            else:
                errs.append(f"STEP_FINISHED for stepName {ev.step_name!r} with no open STEP_STARTED")
        elif t in ("RUN_FINISHED", "RUN_ERROR"):
            if t == "RUN_FINISHED":
                if self.open_msgs:
                    errs.append(f"RUN_FINISHED with open text messages {sorted(self.open_msgs)}")
                if self.open_steps:
                    errs.append(f"RUN_FINISHED with open steps {self.open_steps}")
            self.state = "finished"
        return errs

    def end(self) -> list[str]:
        if self.state == "running":
            return ["stream ended without RUN_FINISHED or RUN_ERROR"]
        return []


def validate(lines: Iterable[str], allow_extra: bool, sequence: bool) -> tuple[int, int, list[str]]:
    ok = bad = 0
    errors: list[str] = []
    seq = Sequencer()
    for no, text in read_payloads(lines):
        where = f"line {no}"
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as e:
            bad += 1
            errors.append(f"{where}: not JSON: {e}: {text[:80]}")
            continue
        if not isinstance(obj, dict):
            bad += 1
            errors.append(f"{where}: not a JSON object")
            continue
        where += f" ({obj.get('type', '?')})"
        try:
            ev = EVENT_ADAPTER.validate_python(obj)
        except ValidationError as e:
            bad += 1
            for err in e.errors():
                loc = ".".join(str(x) for x in err["loc"])
                errors.append(f"{where}: {loc}: {err['msg']}")
            continue
        ev_errs: list[str] = []
        if not allow_extra:
            ev_errs += [f"unknown field {p}" for p in _extras(ev, "")]
        dumped = ev.model_dump(mode="json", by_alias=True, exclude_unset=True)
        ev_errs += _diff(obj, dumped)  # snake_case keys accepted by populate_by_name, coercions
        if sequence:
            ev_errs += seq.feed(ev)
        if ev_errs:
            bad += 1
            errors.extend(f"{where}: {m}" for m in ev_errs)
        else:
            ok += 1
    if sequence and (ok or bad):
        errors.extend(f"end of stream: {m}" for m in seq.end())
    return ok, bad, errors


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="*")
    ap.add_argument("--allow-extra", action="store_true", help="accept unknown fields")
    ap.add_argument("--no-sequence", action="store_true", help="skip the ordering checks")
    args = ap.parse_args()

    def all_lines() -> Iterator[str]:
        if not args.files:
            yield from sys.stdin
        for f in args.files:
            with open(f, encoding="utf-8", newline="") as fh:
                yield from fh

    ok, bad, errors = validate(all_lines(), args.allow_extra, not args.no_sequence)
    for e in errors:
        print(e)
    print(f"{ok} events valid" if not bad else f"{ok} events valid, {bad} invalid")
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
